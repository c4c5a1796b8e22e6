// Git in a sandbox: a repository from init to a push into a bare
// repository, a clone of it, a commit there pulled back, branches and the
// work tree's status (sandbox.git, E2B's names). Remotes by path, inside the
// sandbox; for an http(s) remote pass username and password (they never
// reach a command line).
// SPDX-License-Identifier: Apache-2.0
import { Sandbox, GitUpstreamError } from 'agent-sandbox'

const sandbox = await Sandbox.create()
try {
  const git = sandbox.git
  await git.init('/tmp/remote.git', { bare: true, initialBranch: 'main' })
  await git.init('/tmp/repo', { initialBranch: 'main' })
  await git.configureUser('Example', 'example@example.com')
  await sandbox.files.write('/tmp/repo/README', 'hello\n')
  console.log('untracked', (await git.status('/tmp/repo')).fileStatus[0].name)
  await git.add('/tmp/repo')
  await git.commit('/tmp/repo', 'first')
  await git.remoteAdd('/tmp/repo', 'origin', '/tmp/remote.git')
  try {
    await git.push('/tmp/repo')
  } catch (e) {
    console.log('push without upstream', e instanceof GitUpstreamError)
  }
  await git.push('/tmp/repo', { remote: 'origin', branch: 'main' })

  await git.clone('/tmp/remote.git', { path: '/tmp/clone' })
  await sandbox.files.write('/tmp/clone/NEWS', 'news\n')
  await git.add('/tmp/clone', { files: ['NEWS'] })
  await git.commit('/tmp/clone', 'news')
  await git.push('/tmp/clone')
  await git.pull('/tmp/repo')
  console.log('pulled', (await sandbox.files.read('/tmp/repo/NEWS')).trim())

  await git.createBranch('/tmp/repo', 'topic')
  const b = await git.branches('/tmp/repo')
  console.log('branches', b.branches.join(','), 'on', b.currentBranch)
  const st = await git.status('/tmp/repo')
  console.log('clean', st.isClean)
} finally {
  await sandbox.kill()
}
