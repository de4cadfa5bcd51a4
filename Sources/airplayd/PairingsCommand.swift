import AirPlayPairing
import AirPlayDaemon
import AirPlayReceiver
import AirPlayWire
import ArgumentParser
import Glibc

/// `airplayd pairings list|remove ID|clear`: the controllers paired with this box, managed by
/// a person at the box. The running daemon sees changes at its next pairing check.
struct PairingsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pairings",
        abstract: "List or remove the senders paired with this receiver.",
        subcommands: [List.self, Remove.self, Clear.self, Create.self, Churn.self])

    /// Where the pairings are: the configured state directory, or `--state-dir`.
    struct Location: ParsableArguments {
        @Option(name: .long, help: "Configuration file (TOML) naming the state directory.")
        var config: String?

        @Option(name: .customLong("state-dir"), help: "State directory (overrides the configuration file).")
        var stateDir: String?

        func store() throws -> PairingStore {
            var directory = stateDir
            if directory == nil {
                do {
                    directory = try ReceiverConfiguration.load(path: config ?? ReceiverConfiguration.defaultPath, required: config != nil).stateDirectory
                } catch {
                    throw ValidationError("\(error)")
                }
            }
            do {
                return try PairingStore(directory: directory!)
            } catch {
                throw ValidationError("\(error)")
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print each paired sender: identifier, admin or user, public key.")
        @OptionGroup var location: Location

        func run() throws {
            let store = try location.store()
            print("this receiver: \(store.identity.identifier)")
            let all = store.all
            if all.isEmpty { print("no paired senders") }
            for pairing in all {
                print("\(pairing.identifier)  \(pairing.admin ? "admin" : "user ")  \(TextFormatting.hex(pairing.publicKey))")
            }
        }

    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Forget one paired sender; its connections lose access at once.")
        @OptionGroup var location: Location
        @Argument(help: "The sender's pairing identifier (from `airplayd pairings list`).")
        var identifier: String

        func run() throws {
            guard try location.store().remove(identifier) else { throw ValidationError("no paired sender \(identifier)") }
            print("removed \(identifier)")
        }
    }

    /// Makes the pairing identity if there is none. The daemon runs it as a child at its first
    /// start, so that generating the Ed25519 key does not load OpenSSL's providers into the
    /// daemon itself (about 2.7 MiB it would keep until restarted).
    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "create-identity", abstract: "Internal.", shouldDisplay: false)
        @OptionGroup var location: Location

        func run() throws { _ = try location.store() }

        /// Runs this command in a child when `directory` has no identity yet.
        static func ensureIdentity(in directory: String) {
            let path = (directory.hasSuffix("/") ? String(directory.dropLast()) : directory) + "/pairing-identity"
            guard access(path, F_OK) != 0 else { return }
            // On failure the daemon makes it itself (and pays the memory).
            _ = ChildProcess.output(of: "/proc/self/exe", arguments: ["pairings", "create-identity", "--state-dir", directory], timeout: 30)
        }
    }

    /// Test-only: rewrites the pairings `count` times, alternating between one and two
    /// controllers, so a test can `kill -9` it mid-write and find the old set or the new one.
    struct Churn: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Test only.", shouldDisplay: false)
        @OptionGroup var location: Location
        @Option var count = 1000

        func run() throws {
            let store = try location.store()
            let first = ControllerPairing(identifier: "churn-a", publicKey: [UInt8](repeating: 1, count: 32), admin: true)
            let second = ControllerPairing(identifier: "churn-b", publicKey: [UInt8](repeating: 2, count: 32), admin: false)
            try store.add(first)
            for _ in 0..<count {
                try store.add(second)
                try store.remove(second.identifier)
            }
        }
    }

    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Forget every paired sender.")
        @OptionGroup var location: Location

        func run() throws {
            let store = try location.store()
            let count = store.all.count
            try store.removeAll()
            print("removed \(count) pairing\(count == 1 ? "" : "s")")
        }
    }
}
