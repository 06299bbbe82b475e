// Who the client agrees to talk to. Whoever can put a socket where the client looks
// receives what it sends, tokens included (`configure`), so before connecting the
// client checks that the socket's folder is the user's alone. Node cannot read a
// Unix socket peer's credentials (SO_PEERCRED); the server makes the same folder
// check where it listens, and refuses peers of another user.

import fs from 'node:fs';
import path from 'node:path';

/** The socket may be another user's: nothing was sent. `code`: 'NETMODEL_UNTRUSTED_SOCKET'. */
export class UntrustedSocketError extends Error {
  constructor(message) {
    super(message);
    this.name = 'UntrustedSocketError';
    this.code = 'NETMODEL_UNTRUSTED_SOCKET';
  }
}

/**
 * Throws UntrustedSocketError unless the folder of `socketPath` is a real folder (not
 * a symbolic link) owned by this user that neither its group nor others can write.
 * A missing folder passes: connecting then fails as usual (ENOENT).
 */
export function checkSocketFolder(socketPath) {
  const folder = path.dirname(socketPath);
  let st;
  try {
    st = fs.lstatSync(folder);
  } catch (error) {
    if (error.code === 'ENOENT') return;
    throw error;
  }
  const me = process.geteuid();
  const refuse = `refusing to connect to ${socketPath}: its folder ${folder}`;
  if (st.isSymbolicLink()) throw new UntrustedSocketError(`${refuse} is a symbolic link; give the real path`);
  if (st.uid !== me) {
    throw new UntrustedSocketError(
      `${refuse} belongs to uid ${st.uid}, not to this user (uid ${me}), who could have put any server there`,
    );
  }
  const group = (st.mode & 0o020) !== 0;
  const others = (st.mode & 0o002) !== 0;
  if (group || others) {
    const writers = group && others ? 'its group and other users' : group ? 'its group' : 'other users';
    const mode = (st.mode & 0o7777).toString(8).padStart(4, '0');
    throw new UntrustedSocketError(
      `${refuse} can be written by ${writers} (mode ${mode}), who could have put any server there; run \`chmod 700 ${folder}\``,
    );
  }
}
