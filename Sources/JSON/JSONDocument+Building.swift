extension JSONDocument {
  /// Reads a text into nodes with `JSONScanner`'s pieces (strings, numbers, literals,
  /// whitespace), so it accepts what the scanner accepts, and so what jansson accepts.
  /// Containers are walked without recursion (2048 levels would overflow a small
  /// thread stack): the open ones are found through `parent`.
  struct Builder {
    var scanner: JSONScanner
    /// The nodes so far, in the order their values begin (the top-level value first).
    /// Plain memory, not an array: setting a field of an array's element checks its
    /// uniqueness and bounds each time, and the fuzzer instruments every check. The
    /// document takes it over (`release` frees it when the text is refused).
    var nodes: UnsafeMutablePointer<Node>
    var count = 0
    var capacity: Int
    /// The innermost open container (-1: none) and how many are open.
    var open = -1
    var depth = 0
    /// Where the value (or member) being read began: right after the opener or comma
    /// before it (0 for the top-level value); or, after a value, where it ended. From
    /// there jansson can re-read what failed (`janssonError`).
    var restart = 0
    /// After a value: that value; -1 while reading one.
    var completed = -1
    /// Whether a comma came before the value (or member) being read.
    var afterComma = false
    /// Where a NUL right after a number or literal was skipped (jansson loses those).
    var lostNULs: [Int] = []
    /// Whether the text was refused for nesting deeper than jansson reads.
    var tooDeep = false

    init(_ text: UnsafeRawBufferPointer) {
      scanner = JSONScanner(
        base: text.baseAddress!.assumingMemoryBound(to: UInt8.self), end: text.count)
      // A value of a configuration file takes 12 to 40 bytes of it: one or two
      // allocations for most files, and not too large for one refused early (under
      // AddressSanitizer, allocating and freeing cost in proportion to the size).
      capacity = text.count / 32 + 8
      nodes = .allocate(capacity: capacity)
    }

    func release() { nodes.deallocate() }

    /// Adds `node`, returning its index.
    @inline(__always)
    private mutating func append(_ node: Node) -> Int {
      if count == capacity {
        let larger = UnsafeMutablePointer<Node>.allocate(capacity: capacity * 2)
        larger.moveInitialize(from: nodes, count: count)
        nodes.deallocate()
        nodes = larger
        capacity *= 2
      }
      (nodes + count).initialize(to: node)
      count += 1
      return count - 1
    }

    /// Refusals here need no message of their own: `JSONDocument.parse` gives jansson's.
    static let refused = JSONError(message: "refused", line: 0, column: 0, position: 0)

    mutating func read() throws(JSONError) {
      var keyStart = 0
      var keyEnd = 0
      var keyEscaped = false

      skipWhitespace()
      value: while true {
        // A value starts at `scanner.pos` (whitespace skipped); inside an object, its
        // key is `keyStart..<keyEnd`.
        if depth >= JSONScanner.maximumDepth {
          tooDeep = true
          throw Self.refused
        }
        guard scanner.pos < scanner.end else { throw Self.refused }
        let inObject = open >= 0 && nodes[open].kind == .object
        var node = Node(kind: .null, start: scanner.pos, parent: open)
        if inObject {
          node.keyStart = keyStart
          node.keyEnd = keyEnd
          node.keyEscaped = keyEscaped
        }
        let c = scanner.base[scanner.pos]
        let index: Int
        if c == UInt8(ascii: "{") || c == UInt8(ascii: "[") {
          let isObject = c == UInt8(ascii: "{")
          node.kind = isObject ? .object : .array
          index = append(node)
          link(index, to: open)
          scanner.pos += 1
          restart = scanner.pos
          afterComma = false
          skipWhitespace()
          if scanner.pos < scanner.end
            && scanner.base[scanner.pos] == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]"))
          {
            scanner.pos += 1
            nodes[index].end = scanner.pos
          } else {
            open = index
            depth += 1
            if isObject { (keyStart, keyEnd, keyEscaped) = try scanKey() }
            continue value
          }
        } else {
          let info = try scanner.scanValue(enclosing: depth)
          node.kind = info.kind
          node.end = scanner.pos
          node.valueEscaped = info.kind == .string && info.flag
          index = append(node)
          link(index, to: open)
        }

        // After a value: the next one in the innermost open container, or its end.
        var value = index
        while true {
          completed = value
          restart = nodes[value].end
          if scanner.pos < scanner.end && scanner.base[scanner.pos] == 0 {
            scanner.skipNULAfterToken(nodes[value].kind)
            if scanner.pos != restart { lostNULs.append(restart) }
          }
          skipWhitespace()
          guard open >= 0 else {
            guard scanner.pos == scanner.end else { throw Self.refused }
            return
          }
          guard scanner.pos < scanner.end else { throw Self.refused }
          let isObject = nodes[open].kind == .object
          let c = scanner.base[scanner.pos]
          if c == UInt8(ascii: ",") {
            scanner.pos += 1
            completed = -1
            restart = scanner.pos
            afterComma = true
            skipWhitespace()
            if isObject { (keyStart, keyEnd, keyEscaped) = try scanKey() }
            continue value
          }
          guard c == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else { throw Self.refused }
          scanner.pos += 1
          nodes[open].end = scanner.pos
          nodes[open].next = -1
          if isObject { keepLastOfEachKey(open) }
          value = open
          open = nodes[open].parent
          depth -= 1
        }
      }
    }

    /// A member's `"key" :`, leaving the scanner at its value.
    private mutating func scanKey() throws(JSONError) -> (Int, Int, Bool) {
      guard scanner.pos < scanner.end && scanner.base[scanner.pos] == UInt8(ascii: "\"") else { throw Self.refused }
      let start = scanner.pos + 1
      scanner.pos = start
      let flags = try scanner.scanString()
      if flags & JSONScanner.sawNULEscape != 0 { throw Self.refused }
      let end = scanner.pos - 1
      skipWhitespace()
      guard scanner.pos < scanner.end && scanner.base[scanner.pos] == UInt8(ascii: ":") else { throw Self.refused }
      scanner.pos += 1
      skipWhitespace()
      return (start, end, flags & JSONScanner.sawEscape != 0)
    }

    /// Skips spaces, tabs, line breaks and carriage returns eight bytes at a time: a
    /// configuration file is mostly indentation, and the fuzzer's coverage
    /// instrumentation calls a hook for each comparison of a byte-by-byte loop.
    @inline(__always)
    private mutating func skipWhitespace() {
      while scanner.end - scanner.pos >= 8 {
        let word = UInt64(littleEndian: UnsafeRawPointer(scanner.base + scanner.pos).loadUnaligned(as: UInt64.self))
        let ones: UInt64 = 0x0101_0101_0101_0101
        let other =
          ~(Self.zeroBytes(word ^ (ones &* 0x20)) | Self.zeroBytes(word ^ (ones &* 0x0A))
          | Self.zeroBytes(word ^ (ones &* 0x0D)) | Self.zeroBytes(word ^ (ones &* 0x09))) & (ones &* 0x80)
        if other != 0 {
          scanner.pos += other.trailingZeroBitCount / 8
          return
        }
        scanner.pos += 8
      }
      scanner.skipWhitespace()
    }

    /// A mask with the high bit set in each byte of `word` that is zero (and no other).
    @inline(__always)
    static func zeroBytes(_ word: UInt64) -> UInt64 {
      let low7: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
      return ~(((word & low7) &+ low7) | word | low7)
    }

    /// Appends `child` to `parent`'s children. An open container has no next sibling
    /// yet: its `next` holds its last child until it closes.
    private mutating func link(_ child: Int, to parent: Int) {
      guard parent >= 0 else { return }
      let last = nodes[parent].next
      if last >= 0 {
        nodes[last].next = child
      } else {
        nodes[parent].first = child
      }
      nodes[parent].next = child
      nodes[parent].count += 1
    }

    // MARK: - Keys given twice

    /// jansson keeps one member per key: at the place the key first appears, with the
    /// value it was given last. Relinks `object`'s children that way.
    private mutating func keepLastOfEachKey(_ object: Int) {
      let text = UnsafeRawBufferPointer(start: scanner.base, count: scanner.end)
      let count = nodes[object].count
      guard count > 1 else { return }
      // Most objects are small and have no key twice: find that out without allocating.
      if count <= 16 {
        var hasDuplicate = false
        var a = nodes[object].first
        search: while a >= 0 {
          var b = nodes[a].next
          while b >= 0 {
            if Self.sameKey(nodes[a], nodes[b], text) {
              hasDuplicate = true
              break search
            }
            b = nodes[b].next
          }
          a = nodes[a].next
        }
        guard hasDuplicate else { return }
      }
      var children: [Int] = []
      children.reserveCapacity(count)
      var child = nodes[object].first
      while child >= 0 {
        children.append(child)
        child = nodes[child].next
      }
      // The children sorted by a hash of their decoded key, then by place: equal keys
      // end up next to each other, the first place first.
      let keyed = children.enumerated().map { (hash: Self.keyHash(nodes[$0.element], text), place: $0.offset) }
        .sorted { ($0.hash, $0.place) < ($1.hash, $1.place) }
      // For each place, the place where its key first appears.
      var firstPlace = Array(0..<count)
      var run = 0
      while run < keyed.count {
        var runEnd = run + 1
        while runEnd < keyed.count && keyed[runEnd].hash == keyed[run].hash { runEnd += 1 }
        for later in run..<runEnd {
          for earlier in run..<later where firstPlace[keyed[earlier].place] == keyed[earlier].place {
            if Self.sameKey(nodes[children[keyed[earlier].place]], nodes[children[keyed[later].place]], text) {
              firstPlace[keyed[later].place] = keyed[earlier].place
              break
            }
          }
        }
        run = runEnd
      }
      // Each first place holds the last value of its key.
      var kept = children
      for place in 0..<count where firstPlace[place] != place { kept[firstPlace[place]] = children[place] }
      var previous = -1
      var distinct = 0
      for place in 0..<count where firstPlace[place] == place {
        let node = kept[place]
        if previous >= 0 { nodes[previous].next = node } else { nodes[object].first = node }
        previous = node
        distinct += 1
      }
      nodes[previous].next = -1
      nodes[object].count = distinct
    }

    /// The decoded bytes of a member's key (escapes resolved only when it has some).
    private static func withKey<R>(
      _ node: Node, _ text: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> R
    ) -> R {
      let raw = UnsafeRawBufferPointer(rebasing: text[node.keyStart..<node.keyEnd])
      guard node.keyEscaped else { return body(raw) }
      let scanner = JSONScanner(
        base: text.baseAddress!.assumingMemoryBound(to: UInt8.self), end: text.count)
      var decoded = scanner.decodedString(from: node.keyStart, to: node.keyEnd, hasEscapes: true)
      return decoded.withUTF8 { body(UnsafeRawBufferPointer($0)) }
    }

    private static func sameKey(_ a: Node, _ b: Node, _ text: UnsafeRawBufferPointer) -> Bool {
      if !a.keyEscaped && !b.keyEscaped {
        return a.keyEnd - a.keyStart == b.keyEnd - b.keyStart
          && text[a.keyStart..<a.keyEnd].elementsEqual(text[b.keyStart..<b.keyEnd])
      }
      return withKey(a, text) { a in withKey(b, text) { b in a.elementsEqual(b) } }
    }

    /// FNV-1a of the decoded key.
    private static func keyHash(_ node: Node, _ text: UnsafeRawBufferPointer) -> UInt64 {
      withKey(node, text) { key in
        key.reduce(0xcbf2_9ce4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
      }
    }
  }
}
