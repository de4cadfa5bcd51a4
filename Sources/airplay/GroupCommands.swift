import AirPlaySender
import ArgumentParser
import Foundation
import Glibc

/// Where a running `airplay stream --mode buffered` takes requests: a Unix socket in the user's
/// runtime directory, one per user (the latest stream owns it).
enum StreamControl {
    /// `$XDG_RUNTIME_DIR/airplay-stream.sock`, else `/tmp/airplay-stream-UID.sock`.
    static var path: String {
        if let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            return runtime + "/airplay-stream.sock"
        }
        return "/tmp/airplay-stream-\(getuid()).sock"
    }

    /// A `sockaddr_un` for `path` (nil when the path does not fit).
    static func address(_ path: String) -> sockaddr_un? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        return address
    }
}

/// The control socket of a running buffered stream: each connection sends one line,
/// `add TARGET`, and gets `ok NAME` or `error REASON` back once the receiver plays in step or failed.
final class StreamControlServer: @unchecked Sendable {
    private let descriptor: Int32
    private let path: String
    private var stopped = false

    /// Listens at `StreamControl.path`; `add` sets a receiver up and says how it went.
    init?(add: @escaping @Sendable (String) async -> String) {
        path = StreamControl.path
        unlink(path)
        let socket = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0, var address = StreamControl.address(path) else { return nil }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(socket, 4) == 0 else {
            Glibc.close(socket)
            return nil
        }
        chmod(path, 0o600)
        descriptor = socket
        let thread = Thread {
            while true {
                let client = accept(socket, nil, nil)
                if client < 0 { return }
                Task {
                    let line = Self.readLine(client)
                    let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
                    let answer: String
                    if parts.count == 2, parts[0] == "add" {
                        answer = await add(parts[1])
                    } else {
                        answer = "error expected: add TARGET"
                    }
                    _ = Array((answer + "\n").utf8).withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    Glibc.close(client)
                }
            }
        }
        thread.start()
    }

    /// Stops listening and removes the socket file.
    func close() {
        guard !stopped else { return }
        stopped = true
        shutdown(descriptor, Int32(SHUT_RDWR))
        Glibc.close(descriptor)
        unlink(path)
    }

    /// One line (at most 1 KiB), without its newline.
    static func readLine(_ client: Int32) -> String {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while bytes.count < 1024, recv(client, &byte, 1, 0) == 1, byte != UInt8(ascii: "\n") { bytes.append(byte) }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// `airplay group add --to TARGET…`: adds receivers to the running `airplay stream --mode
/// buffered`; each starts in step with the others within a couple of seconds.
struct GroupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "group", abstract: "Change the receivers of a running buffered stream.",
        subcommands: [GroupAddCommand.self])
}

/// `airplay group add`.
struct GroupAddCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add receivers to the running `airplay stream --mode buffered`: they join in step.",
        discussion: "Exit codes: 69 no buffered stream is running, 77 a receiver could not join.")

    @Option(name: .long, help: "Receiver: a name, a device id, or HOST:PORT; repeat for several.")
    var to: [String] = []

    func validate() throws {
        guard !to.isEmpty else { throw ValidationError("name a receiver with --to") }
    }

    func run() throws {
        var failed = false
        for target in to {
            let answer = try Self.ask("add \(target)")
            print(answer)
            if !answer.hasPrefix("ok") { failed = true }
        }
        if failed { throw ExitCode(77) }
    }

    /// Sends one request to the running stream and returns its answer.
    static func ask(_ line: String) throws -> String {
        let socket = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0, var address = StreamControl.address(StreamControl.path) else { throw ExitCode(69) }
        defer { close(socket) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            FileHandle.standardError.write(Data("airplay: no buffered stream is running (airplay stream --mode buffered)\n".utf8))
            throw ExitCode(69)
        }
        _ = Array((line + "\n").utf8).withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return StreamControlServer.readLine(socket)
    }
}
