// CommonJS consumers get the same classes as ESM ones.
const { Sandbox } = require('agent-sandbox')
const compat = require('agent-sandbox/compat')
const ci = require('agent-sandbox/compat/code-interpreter')
import('agent-sandbox').then((esm) => {
  console.log(typeof Sandbox.create, esm.Sandbox === Sandbox, Object.getPrototypeOf(ci.Sandbox) === compat.Sandbox)
})
