import Foundation
import Testing

/// The `surveyd` binary's own arguments: a mistyped option or `--help` must never start a
/// server or create a data dir somewhere unexpected.
@Suite struct CommandLineTests {
    /// Runs `surveyd args` in a fresh empty working directory (where the default `./data` would
    /// go), with no SURVEYD_ settings from the environment.
    static func run(_ args: [String], in directory: String) throws -> ServerProcess.CommandOutcome {
        let environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SURVEYD_") }
        return try ServerProcess.command(args, directory: directory, environment: environment, timeout: 20)
    }

    static func emptyDirectory() throws -> String {
        let dir = NSTemporaryDirectory() + "surveyd-cli-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test(arguments: [["serve", "--help"], ["serve", "--port", "0", "--help"], ["admin", "create-org", "--help"], ["--help"]])
    func helpShowsTheUsageAndRunsNothing(args: [String]) throws {
        let dir = try Self.emptyDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let outcome = try Self.run(args, in: dir)
        #expect(outcome.status == 0)
        #expect(outcome.stdout.contains("usage:"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty, "nothing may be created")
    }

    /// An option followed by another option has no value: `--to --data-dir d` must not back up
    /// into a directory named "--data-dir".
    @Test func anOptionWithoutItsValueIsRefused() throws {
        let dir = try Self.emptyDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let outcome = try Self.run(["backup", "--to", "--data-dir", dir + "/d"], in: dir)
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("--to needs a value"), "stderr: \(outcome.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty, "nothing may be created")
    }

    /// `--no-log=1` is not a spelling of `--no-log`: refused rather than silently ignored.
    @Test func aFlagGivenAValueIsRefused() throws {
        let dir = try Self.emptyDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let outcome = try Self.run(["serve", "--no-log=1"], in: dir)
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("--no-log takes no value"), "stderr: \(outcome.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty, "nothing may be created")
    }

    @Test(arguments: [["serve", "--data-dri", "x"], ["serve", "--prot=9000"], ["check", "--verbose"], ["admin", "create-org", "--nmae", "A"]])
    func anUnknownOptionIsRefusedAndNothingIsCreated(args: [String]) throws {
        let dir = try Self.emptyDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let outcome = try Self.run(args, in: dir)
        #expect(outcome.status == 1)
        let option = args.first { $0.hasPrefix("--") }!.split(separator: "=")[0]
        #expect(outcome.stderr.contains("unknown option \(option)"), "stderr: \(outcome.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty, "nothing may be created")
    }

    /// A trusted proxy must be an address: a host name or a typo is refused before anything starts.
    @Test(arguments: ["proxy.example.org", "127.0.0.1,,", "127.0.0.256", ""])
    func aTrustedProxyThatIsNoAddressIsRefused(value: String) throws {
        let dir = try Self.emptyDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let outcome = try Self.run(["serve", "--trusted-proxy=\(value)"], in: dir)
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("--trusted-proxy must be IPv4 addresses"), "stderr: \(outcome.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty, "nothing may be created")
    }

    /// A libcrypto configured without the digests and random numbers surveyd uses (here: only
    /// OpenSSL's base provider) is named at start, and nothing starts: no request can then
    /// reach a missing algorithm and stop the server.
    @Test(arguments: [["serve", "--port", "0"], ["admin", "create-org", "--name", "A", "--expires-at", "2030-01-01T00:00:00Z"]])
    func aLibcryptoWithoutItsAlgorithmsIsRefusedAtStart(args: [String]) throws {
        let dir = try Self.emptyDirectory()
        let config = NSTemporaryDirectory() + "surveyd-openssl-" + UUID().uuidString + ".cnf"
        defer { try? FileManager.default.removeItem(atPath: dir); try? FileManager.default.removeItem(atPath: config) }
        try """
            openssl_conf = openssl_init
            [openssl_init]
            providers = provider_sect
            [provider_sect]
            base = base_sect
            [base_sect]
            activate = 1
            """.write(toFile: config, atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SURVEYD_") }
        environment["OPENSSL_CONF"] = config
        let outcome = try ServerProcess.command(args + ["--data-dir", dir + "/data"], directory: dir, environment: environment, timeout: 20)
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("libcrypto (OpenSSL) here provides no SHA256, SHA1, MD5"), "stderr: \(outcome.stderr)")
        #expect(outcome.stderr.contains("Nothing was started or changed."), "stderr: \(outcome.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty, "nothing may be created")
    }
}
