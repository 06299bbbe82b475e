// Newline-delimited messages out of a byte stream, in time linear in their size: each
// chunk is searched once, from where the last search stopped, and a message's pieces
// are joined once it is whole. (Appending chunks to one string and searching it from
// its start again made a message of n chunks cost n² — seconds for tens of MB.)
// Bytes, not text: a newline byte never occurs inside a UTF-8 sequence, so a sequence
// split across chunks is decoded whole with its line.

const NEWLINE = 0x0a;

export class LineSplitter {
  #pieces = []; // the current line's bytes so far, chunk by chunk

  /** Calls `onLine(text)` for each line that `chunk` (a Buffer) completes. */
  push(chunk, onLine) {
    let start = 0;
    for (let nl = chunk.indexOf(NEWLINE); nl >= 0; nl = chunk.indexOf(NEWLINE, start)) {
      let line = chunk.subarray(start, nl);
      if (this.#pieces.length > 0) {
        this.#pieces.push(line);
        line = Buffer.concat(this.#pieces);
        this.#pieces = [];
      }
      start = nl + 1;
      onLine(line.toString('utf8'));
    }
    if (start < chunk.length) this.#pieces.push(start === 0 ? chunk : chunk.subarray(start));
  }
}
