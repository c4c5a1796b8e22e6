'use strict'
// npm pack: the tarball carries the generated ABI table (bindings/gen/
// api_table.h) next to the addon's sources, so it builds outside the repo.
// SPDX-License-Identifier: Apache-2.0
const fs = require('node:fs')
const path = require('node:path')
const src = path.join(__dirname, '..', '..', 'gen', 'api_table.h')
const dst = path.join(__dirname, '..', 'src', 'gen', 'api_table.h')
if (fs.existsSync(src)) {
  fs.mkdirSync(path.dirname(dst), { recursive: true })
  fs.copyFileSync(src, dst)
}
