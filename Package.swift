// swift-tools-version:6.0
// One target per layer; each depends only on the layers above it:
// C shims → Posix → EventLoop → JSON → JSONRPC / HTTP → NetworkModels → Service → netmodel.
import PackageDescription

// The libFuzzer target links against clang's fuzzer runtime, which a normal build
// must not do, so it exists only when asked for (see docs/development.md "Fuzzing"); the same
// environment asks for a release build with exclusivity checks.
import class Foundation.ProcessInfo

/// Release builds drop the run-time exclusivity checks; the compile-time ones stay, and
/// debug builds and the tests keep both. Safe here because the checks that go are for
/// accesses the compiler cannot see whole (class properties, globals, escaped
/// captures), and netmodel touches each from one thread (the models' loop; libcurl's
/// multi handle and its transfers belong to one thread at a time, handed whole through a
/// mailbox behind a lock): two accesses can overlap only
/// when code re-enters an object while one of its properties is being modified, and no
/// such path trips the checks, neither in the debug build under `swift test` nor in a
/// checked release build (`NETMODEL_EXCLUSIVITY_CHECKED=1`) under the interop suite.
/// The cost of keeping them, and that evidence: bench/README.md, "Exclusivity checks in
/// release builds". A root-package-only flag, which netmodel, a root package, may use.
///
/// Release builds also reach a concrete generic type's metadata (`[String: Int]`,
/// `Array<Entry>`) through a direct accessor instead of demangling its name at first
/// use, which looks its conformances up in the runtime's tables: a sixth of the
/// instructions from exec to the first answer (bench/README.md, "Start-up").
let releaseSettings: [SwiftSetting] =
  [
    .unsafeFlags(
      ["-Xfrontend", "-disable-concrete-type-metadata-mangled-name-accessors"], .when(configuration: .release))
  ]
  + (ProcessInfo.processInfo.environment["NETMODEL_EXCLUSIVITY_CHECKED"] != nil
    ? [] : [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))])

var package = Package(
  name: "netmodel",
  products: [
    .executable(name: "netmodel", targets: ["netmodel"])
  ],
  targets: [
    .systemLibrary(name: "CSystem", path: "Sources/CSystem"),
    .systemLibrary(
      name: "CJansson", path: "Sources/CJansson", pkgConfig: "jansson",
      providers: [.apt(["libjansson-dev"])]),
    // libcurl's header at build time (libcurl4-openssl-dev); the library itself is opened
    // when the first HTTP client is made (Sources/CCurl/include/CCurl.h), not linked.
    .target(name: "CCurl", path: "Sources/CCurl"),
    .target(name: "Posix", dependencies: ["CSystem"], swiftSettings: releaseSettings),
    .target(name: "EventLoop", dependencies: ["Posix"], swiftSettings: releaseSettings),
    .target(name: "JSON", dependencies: ["CJansson"], swiftSettings: releaseSettings),
    .target(name: "JSONRPC", dependencies: ["JSON", "EventLoop", "Posix"], swiftSettings: releaseSettings),
    .target(name: "HTTP", dependencies: ["CCurl", "EventLoop", "Posix"], swiftSettings: releaseSettings),
    .target(
      name: "NetworkModels", dependencies: ["HTTP", "EventLoop", "JSON", "Posix"], swiftSettings: releaseSettings),
    // `rpc.discover` answers schema/openrpc.json itself: the resource is a symbolic link
    // to it, embedded at build time, so the contract exists once in the tree.
    .target(
      name: "Service", dependencies: ["NetworkModels", "JSONRPC", "JSON", "EventLoop", "Posix"],
      resources: [.embedInCode("Resources/openrpc.json")], swiftSettings: releaseSettings),
    // `--version` names the commit: the plugin writes it before each build (Plugins/BuildCommit).
    .executableTarget(
      name: "netmodel", dependencies: ["Service", "NetworkModels", "HTTP", "JSONRPC", "JSON", "EventLoop", "Posix"],
      swiftSettings: releaseSettings, plugins: ["BuildCommit"]),
    .plugin(name: "BuildCommit", capability: .buildTool()),
    .target(name: "TestSupport", dependencies: ["JSONRPC", "JSON", "EventLoop", "Posix", "NetworkModels"]),
    .testTarget(name: "PosixTests", dependencies: ["Posix"]),
    .testTarget(name: "HTTPTests", dependencies: ["HTTP", "EventLoop", "Posix", "TestSupport", "NetworkModels"]),
    .testTarget(name: "EventLoopTests", dependencies: ["EventLoop", "Posix"]),
    .testTarget(name: "JSONTests", dependencies: ["JSON", "Posix", "TestSupport"]),
    .testTarget(
      name: "NetworkModelsTests", dependencies: ["NetworkModels", "HTTP", "EventLoop", "JSON", "Posix", "TestSupport"]),
    .testTarget(name: "JSONRPCTests", dependencies: ["JSONRPC", "JSON", "EventLoop", "Posix", "TestSupport"]),
    .testTarget(
      name: "ServiceTests", dependencies: ["Service", "JSONRPC", "JSON", "EventLoop", "Posix", "TestSupport"]),
    .testTarget(name: "NetmodelTests", dependencies: ["netmodel", "NetworkModels", "JSON", "Posix"]),
  ],
  swiftLanguageModes: [.v6]
)

if ProcessInfo.processInfo.environment["NETMODEL_FUZZ"] != nil {
  // One libFuzzer target per surface (see Fuzz/README.md); FuzzSupport holds the driver.
  // scripts/fuzz builds them with -enable-testing: the focused targets call internal
  // functions (`@testable import`) rather than widening the API for fuzzing.
  package.targets += [
    .target(name: "FuzzSupport", path: "Fuzz/FuzzSupport"),
    .executableTarget(
      name: "FuzzDispatch", dependencies: ["FuzzSupport", "JSONRPC", "JSON", "Service", "EventLoop", "Posix"],
      path: "Fuzz/FuzzDispatch"),
    .executableTarget(name: "FuzzJSON", dependencies: ["FuzzSupport", "JSON", "TestSupport"], path: "Fuzz/FuzzJSON"),
    .executableTarget(name: "FuzzFrames", dependencies: ["FuzzSupport", "JSONRPC"], path: "Fuzz/FuzzFrames"),
    .executableTarget(
      name: "FuzzRESTConfig", dependencies: ["FuzzSupport", "NetworkModels", "HTTP", "JSON"],
      path: "Fuzz/FuzzRESTConfig"),
    .executableTarget(
      name: "FuzzRESTAnswers", dependencies: ["FuzzSupport", "NetworkModels", "HTTP", "JSON"],
      path: "Fuzz/FuzzRESTAnswers"),
    .executableTarget(
      name: "FuzzStateFiles", dependencies: ["FuzzSupport", "NetworkModels", "JSON"], path: "Fuzz/FuzzStateFiles"),
  ]
}
