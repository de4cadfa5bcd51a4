import AirPlayPairing
import AirPlaySender
import AirPlayWire
import ArgumentParser
import Foundation

/// `airplay pair`: HAP pair-setup with the PIN the receiver shows; the credentials are kept for
/// every later command, which pair-verifies by itself.
struct PairCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair",
        abstract: "Pair with a receiver using the PIN it shows; later commands then prove who you are.")

    @OptionGroup var receiver: ReceiverOptions

    @Option(name: .long, help: "The PIN (for scripts); asked on the terminal when left out.")
    var pin: String?

    func run() async throws {
        var credentials: SenderCredentials
        do {
            credentials = try SenderCredentials()
        } catch {
            FileHandle.standardError.write(Data("airplay: \(error.message)\n".utf8))
            throw ExitCode(ExitStatus.code(for: error))
        }
        let pinGiven = pin
        var paired: PairingClient.ReceiverCredentials?
        var key = ""
        try await withReceiver(receiver, needVideo: false, secure: false) { address, connection, _ throws(SenderError) in
            let code: String
            if let pinGiven { code = pinGiven } else { code = try Self.askPIN(for: address.name) }
            guard code.count == 4, code.allSatisfy({ ("0"..."9").contains($0) }) else { throw SenderError(.badInput, "a PIN is four digits") }
            paired = try await connection.pairSetup(identity: credentials.identity, pin: code)
            key = address.key
        }
        guard let paired else { return }
        credentials.remember(paired, as: key)
        do {
            try credentials.save()
        } catch {
            FileHandle.standardError.write(Data("airplay: \(error.message)\n".utf8))
            throw ExitCode(ExitStatus.code(for: error))
        }
        done(receiver, "paired with \(key) (receiver \(paired.identifier)); credentials in \(credentials.path)",
             ["receiver": key, "pairingIdentifier": paired.identifier])
    }

    private static func askPIN(for name: String) throws(SenderError) -> String {
        guard isatty(0) == 1 else { throw SenderError(.badInput, "give the PIN with --pin (standard input is not a terminal)") }
        FileHandle.standardError.write(Data("PIN shown by \(name): ".utf8))
        guard let line = readLine() else { throw SenderError(.badInput, "no PIN given") }
        return line.trimmingCharacters(in: .whitespaces)
    }
}

/// `airplay unpair`: forget a receiver's credentials (the receiver keeps its side until
/// removed there: `airplayd pairings remove`).
struct UnpairCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unpair",
        abstract: "Forget the credentials of a receiver paired with.")

    @Option(name: .long, help: "Receiver: a name, a device id, or HOST:PORT.")
    var to: String

    func run() async throws {
        do {
            var credentials = try SenderCredentials()
            let address = try ReceiverResolver.resolve(to, needVideo: false, choose: askOnTerminal)
            guard credentials.forget(address.key) else { throw SenderError(.notFound, "not paired with \(address.key)") }
            try credentials.save()
            print("forgot \(address.key)")
        } catch let error as SenderError {
            FileHandle.standardError.write(Data("airplay: \(error.message)\n".utf8))
            throw ExitCode(ExitStatus.code(for: error))
        }
    }
}
