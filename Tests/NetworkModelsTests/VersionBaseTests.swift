import Posix
import Testing

@testable import NetworkModels

/// The `versions` mark (issue 25, item 10): only a decimal number up to 2^53 − 1 is
/// a mark; anything else is set aside, and no content can make a sum overflow.
@Suite struct VersionBaseTests {
  @Test(
    arguments: [
      ("0\n", 0), ("7", 7), ("0042\n", 42), ("9007199254740991\n", (1 << 53) - 1),
    ] as [(String, UInt64)])
  func marksThatAreNumbers(text: String, value: UInt64) throws {
    #expect(try VersionBase.parseMark(Array(text.utf8)).get() == value)
  }

  @Test(arguments: [
    "", "\n", "-1\n", "1.5\n", "1e3\n", " 5\n", "5 \n", "5\n\n", "12 34\n", "9007199254740992\n",
    "18446744073709551615\n", "18446744073709551616\n", "99999999999999999999999999999999\n",
  ])
  func marksThatAreNot(text: String) {
    #expect((try? VersionBase.parseMark(Array(text.utf8)).get()) == nil)
  }

  @Test func aCorruptMarkIsSetAsideAndVersionsGoOnFromTwoToTheForty() throws {
    let temp = try LocalBackendTestFolder()
    try temp.folder.replace(VersionBase.fileName, with: Array("18446744073709551615\n".utf8))
    let versions = try VersionBase(folder: temp.folder)
    #expect(versions.base == 1 << 40)
    #expect(try temp.folder.read("versions.corrupt-1") == Array("18446744073709551615\n".utf8))
    #expect(try temp.folder.read(VersionBase.fileName) == Array("\((1 << 40) + VersionBase.block)\n".utf8))
  }

  @Test func theLastBlockIsCutAtTheLimitAndTheNextStartRefuses() throws {
    let temp = try LocalBackendTestFolder()
    let last = VersionBase.limit - VersionBase.block
    try temp.folder.replace(VersionBase.fileName, with: Array("\(last + 1)\n".utf8))
    #expect(throws: VersionBase.Exhausted.self) { try VersionBase(folder: temp.folder) }
    try temp.folder.replace(VersionBase.fileName, with: Array("\(last)\n".utf8))
    let versions = try VersionBase(folder: temp.folder)
    versions.ensure(0)
    #expect(versions.base + versions.headroom == VersionBase.limit)
    #expect(throws: VersionBase.Exhausted.self) { try VersionBase(folder: temp.folder) }
  }

  /// A start writes nothing until a version above the last run's mark is to be shown:
  /// then the block is reserved, before the version is.
  @Test func theFirstBlockIsReservedByTheFirstVersionNotByTheStart() throws {
    let temp = try LocalBackendTestFolder()
    try temp.folder.replace(VersionBase.fileName, with: Array("5000\n".utf8))
    let versions = try VersionBase(folder: temp.folder)
    #expect(versions.base == 5000)
    #expect(try temp.folder.read(VersionBase.fileName) == Array("5000\n".utf8))
    versions.ensure(0)
    #expect(try temp.folder.read(VersionBase.fileName) == Array("\(5000 + VersionBase.block)\n".utf8))
    #expect(versions.headroom == VersionBase.block)
  }

  @Test func aFreshFolderGetsItsMarkWithTheFirstVersion() throws {
    let temp = try LocalBackendTestFolder()
    let versions = try VersionBase(folder: temp.folder)
    #expect(try temp.folder.read(VersionBase.fileName) == nil)
    versions.ensure(3)
    #expect(try temp.folder.read(VersionBase.fileName) == Array("\(3 + VersionBase.block)\n".utf8))
  }
}
