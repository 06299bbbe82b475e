/// One JSON text read into a flat array of nodes, for reading a whole document field by
/// field (a REST configuration file) without building a jansson tree: jansson allocates
/// up to four blocks a member (key, pair, value, its string), this one array for all.
///
/// It reads exactly what `JSON.parse` reads (it is `JSONScanner`'s grammar), and
/// presents it as jansson would (FuzzJSON checks both against jansson: `DocumentCheck`):
/// - an object's members in the order of their first appearance, a key given twice
///   keeping its last value (jansson replaces the value in place), `count` counting
///   distinct keys; keys compare by their decoded bytes (`"a"` and `"\u0061"` are one);
/// - integers (no fraction or exponent) apart from reals; strings may hold `\u0000`.
///
/// A refused text throws jansson's own error (its message, line, column and byte), so
/// what callers print is what they printed when they parsed with `JSON.parse`.
///
/// Keys and strings are decoded when read, from the text.
public final class JSONDocument {
  /// One value: where it is in the text and in the tree. Plain data, kept small: under
  /// AddressSanitizer freeing a block costs in proportion to its size (its quarantine
  /// then recycles as many bytes of older blocks), so nothing here is kept that the
  /// text gives back cheaply (an integer's value) or that only building needs.
  struct Node {
    var kind: JSONScanner.Kind
    /// A string value with escapes (decoded through the scanner, not copied).
    var valueEscaped = false
    /// A member's key with escapes.
    var keyEscaped = false
    /// The value's text, `start..<end` (quotes included for a string).
    var start: Int
    var end = 0
    /// A member's key, between its quotes; empty for a value that is no member.
    var keyStart = 0
    var keyEnd = 0
    /// The enclosing object or array; -1 for the top-level value.
    var parent: Int
    /// A container's first child (-1: none) and how many it has; the children are
    /// linked by `next` (a key given twice is unlinked from its later places). While a
    /// container is open, its own `next` holds its last child (`Builder.link`).
    var first = -1
    var count = 0
    var next = -1
  }

  /// The text, which keys and strings are decoded from when read: a copy the document
  /// owns, or the caller's bytes (`parse(borrowing:)`).
  private let text: UnsafeRawBufferPointer
  private let ownsText: Bool
  /// The builder's nodes (`Builder.nodes`), the top-level value first.
  let nodes: UnsafeMutablePointer<Node>

  private init(text: UnsafeRawBufferPointer, ownsText: Bool, nodes: UnsafeMutablePointer<Node>) {
    self.text = text
    self.ownsText = ownsText
    self.nodes = nodes
  }

  deinit {
    nodes.deallocate()
    if ownsText { text.deallocate() }
  }

  /// The top-level value. Valid while this document lives (see `Value`).
  public var root: Value { Value(document: self, index: 0) }

  /// Reads one JSON text, as `JSON.parse` does: any value at the top level.
  public static func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONError) -> JSONDocument {
    guard let source = bytes.baseAddress, !bytes.isEmpty else { throw emptyText }
    let text = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 8)
    text.baseAddress!.copyMemory(from: source, byteCount: bytes.count)
    do {
      return try read(UnsafeRawBufferPointer(text), owned: true)
    } catch {
      text.deallocate()
      throw error
    }
  }

  /// The same without a copy: the document reads `bytes` whenever a key or string is
  /// read, so it must not be used after them (a configuration is checked within its
  /// text's `withUTF8`).
  public static func parse(borrowing bytes: UnsafeRawBufferPointer) throws(JSONError) -> JSONDocument {
    guard bytes.baseAddress != nil, !bytes.isEmpty else { throw emptyText }
    return try read(bytes, owned: false)
  }

  /// `JSON.parse`'s error for an empty text.
  private static let emptyText = JSONError(message: "empty message", line: 1, column: 1, position: 0)

  private static func read(_ text: UnsafeRawBufferPointer, owned: Bool) throws(JSONError) -> JSONDocument {
    var builder = Builder(text)
    do {
      try builder.read()
    } catch {
      defer { builder.release() }
      // The message is jansson's: it is what `check-config` has always printed.
      throw builder.janssonError()
    }
    return JSONDocument(text: text, ownsText: owned, nodes: builder.nodes)
  }

  // MARK: - Reading

  /// A value of a document, borrowed: it holds no reference, so reading costs no
  /// reference counting. Valid only while its document lives: keep the document alive
  /// across every use (`withExtendedLifetime`), and take `owned` to keep a value.
  public struct Value {
    unowned(unsafe) let document: JSONDocument
    let index: Int

    var node: Node { document.nodes[index] }

    public var kind: JSON.Kind { node.kind.jsonKind }
    public var isObject: Bool { node.kind == .object }
    public var isArray: Bool { node.kind == .array }

    /// The object or array holding this value; nil for the top-level value.
    public var parent: Value? {
      let parent = node.parent
      return parent < 0 ? nil : Value(document: document, index: parent)
    }

    /// The key of this value in its parent object; nil when the parent is no object.
    public var key: String? {
      guard let parent, parent.isObject else { return nil }
      let node = self.node
      return document.decoded(from: node.keyStart, to: node.keyEnd, escaped: node.keyEscaped)
    }

    /// Where this value is among its parent's elements or members (0-based).
    public var position: Int {
      guard let parent else { return 0 }
      var position = 0
      var child = parent.node.first
      while child != index && child >= 0 {
        position += 1
        child = document.nodes[child].next
      }
      return position
    }

    /// The number of elements of an array or (distinct) members of an object.
    public var count: Int { node.kind.isContainer ? node.count : 0 }

    /// The member named `key` of an object (its decoded bytes equal to `key`'s); nil
    /// when absent or when this is no object.
    public subscript(key: String) -> Value? {
      guard isObject else { return nil }
      var key = key
      let found: Int? = key.withUTF8 { key in
        var child = node.first
        while child >= 0 {
          if document.keyEquals(child, key) { return child }
          child = document.nodes[child].next
        }
        return nil
      }
      return found.map { Value(document: document, index: $0) }
    }

    /// The elements of an array, in order (none when this is no array).
    public var elements: Children { Children(document: document, coming: isArray ? node.first : -1) }

    /// The members of an object as jansson iterates them (see `JSONDocument`); none
    /// when this is no object.
    public var members: Members { Members(children: Children(document: document, coming: isObject ? node.first : -1)) }

    /// A string's decoded value (`\u0000` included); nil for any other kind.
    public var string: String? {
      let node = self.node
      guard node.kind == .string else { return nil }
      return document.decoded(from: node.start + 1, to: node.end - 1, escaped: node.valueEscaped)
    }

    public var integer: Int64? {
      let node = self.node
      guard node.kind == .integer else { return nil }
      // Digits the scanner checked, of a value that fits: summed as a negative number,
      // which reaches Int64.min.
      var value: Int64 = 0
      var index = node.start
      let negative = document.text[index] == UInt8(ascii: "-")
      if negative { index += 1 }
      while index < node.end {
        value = value &* 10 &- Int64(document.text[index] &- UInt8(ascii: "0"))
        index += 1
      }
      return negative ? value : -value
    }

    public var bool: Bool? {
      switch node.kind {
      case .true: return true
      case .false: return false
      default: return nil
      }
    }

    /// This value as a jansson value of its own (jansson reading the value's text, which
    /// gives what it would have given for it inside the whole document).
    public var owned: JSON {
      let node = self.node
      let parsed = Result { () throws(JSONError) in
        try JSON.parse(UnsafeRawBufferPointer(rebasing: document.text[node.start..<node.end]))
      }
      switch parsed {
      case .success(let json): return json
      case .failure(let error): preconditionFailure("a value of a read document is JSON: \(error)")
      }
    }
  }

  public struct Children: Sequence, IteratorProtocol {
    unowned(unsafe) let document: JSONDocument
    var coming: Int

    public mutating func next() -> Value? {
      guard coming >= 0 else { return nil }
      let value = Value(document: document, index: coming)
      coming = document.nodes[coming].next
      return value
    }
  }

  public struct Members: Sequence, IteratorProtocol {
    var children: Children

    public mutating func next() -> (key: String, value: Value)? {
      guard let value = children.next() else { return nil }
      let node = value.node
      return (children.document.decoded(from: node.keyStart, to: node.keyEnd, escaped: node.keyEscaped), value)
    }
  }

  // MARK: - Text

  private func scanner() -> JSONScanner {
    JSONScanner(base: text.baseAddress!.assumingMemoryBound(to: UInt8.self), end: text.count)
  }

  /// The decoded text of a validated string's contents, `start..<stop`.
  func decoded(from start: Int, to stop: Int, escaped: Bool) -> String {
    guard escaped else {
      return String(decoding: UnsafeRawBufferPointer(rebasing: text[start..<stop]), as: UTF8.self)
    }
    return scanner().decodedString(from: start, to: stop, hasEscapes: true)
  }

  /// Whether member `index`'s decoded key is `key`, byte for byte.
  func keyEquals(_ index: Int, _ key: UnsafeBufferPointer<UInt8>) -> Bool {
    let node = nodes[index]
    guard node.keyEscaped else {
      return node.keyEnd - node.keyStart == key.count
        && UnsafeRawBufferPointer(rebasing: text[node.keyStart..<node.keyEnd]).elementsEqual(key)
    }
    return decoded(from: node.keyStart, to: node.keyEnd, escaped: true).utf8.elementsEqual(key)
  }
}

extension JSONDocument.Value: Equatable {
  /// The same value of the same document.
  public static func == (lhs: Self, rhs: Self) -> Bool { lhs.document === rhs.document && lhs.index == rhs.index }
}
