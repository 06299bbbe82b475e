import Foundation
import PackagePlugin

/// Puts the commit the binary is built from into the `netmodel` target (`buildCommit`),
/// for `netmodel --version`. A prebuild command runs before every build, so the commit
/// follows the tree without a manifest change; scripts/build-commit rewrites the file
/// only when the commit changed, so a build with nothing new compiles nothing. It asks
/// the repository's own `git` (no network); a tree without one (a tarball) says "unknown".
@main struct BuildCommit: BuildToolPlugin {
  func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
    let output = context.pluginWorkDirectoryURL.appending(path: "generated")
    let package = context.package.directoryURL
    return [
      .prebuildCommand(
        displayName: "netmodel: the commit of the tree (scripts/build-commit)",
        executable: URL(fileURLWithPath: "/bin/sh"),
        arguments: [package.appending(path: "scripts/build-commit").path, package.path, output.path],
        outputFilesDirectory: output)
    ]
  }
}
