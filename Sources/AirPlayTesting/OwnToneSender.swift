import Foundation

/// OwnTone 29.3 (built from `../shared/peers` by `tools/setup-deps --test`) as a sender: a media
/// server that finds AirPlay speakers through avahi, plays to them over AirPlay 2 (realtime, on
/// its own PTP clock) or AirPlay 1, and is driven through its JSON API on port 3689. It runs in
/// a test host of its own (it binds PTP's UDP 319 and 320), in the foreground, announcing
/// nothing; its library is one folder of files made by the test.
public final class OwnToneSender: @unchecked Sendable {
    /// The host it runs in.
    public let host: TestHost
    /// Its library folder.
    public let music: String
    private let process: ManagedProcess
    private let curl: String

    /// One output (speaker) as OwnTone lists it.
    public struct Output: Hashable, Sendable {
        /// Its id in the JSON API.
        public var id: String
        /// The speaker's name.
        public var name: String
        /// `AirPlay 2` or `AirPlay 1`.
        public var type: String
        /// 0–100.
        public var volume: Int
    }

    /// Where the build script installs it (`AIRPLAY_PEERS` moves the cache).
    public static var executable: String {
        let root = ProcessInfo.processInfo.environment["AIRPLAY_PEERS"] ?? "/var/cache/airplay-peers"
        return root + "/owntone-29.3/sbin/owntone"
    }

    /// Starts OwnTone in `host` on the files of `music`, and waits until its library holds them.
    /// Throws (the test fails) when OwnTone is not built: `tools/setup-deps --test` builds it.
    public init(host: TestHost, music: String, songs: Int) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable) else {
            throw TestHostError("OwnTone is not built at \(Self.executable): run tools/setup-deps --test (../shared/peers/build owntone)")
        }
        curl = try TestHost.which("curl") ?? { throw TestHostError("curl is a test dependency") }()
        self.host = host
        self.music = music
        let directory = host.directory + "/owntone"
        try FileManager.default.createDirectory(atPath: directory + "/cache", withIntermediateDirectories: true)
        let config = directory + "/owntone.conf"
        try """
            general {
              uid = "root"
              db_path = "\(directory)/songs3.db"
              cache_dir = "\(directory)/cache"
              logfile = "\(directory)/owntone.log"
              loglevel = debug
              ipv6 = no
              speaker_autoselect = no
            }
            library {
              name = "OwnTone"
              port = 3689
              directories = { "\(music)" }
            }
            audio { type = "disabled" }
            mpd { port = 0 }
            """.write(toFile: config, atomically: true, encoding: .utf8)
        process = try host.spawn(Self.executable, ["-f", "-c", config, "--mdns-no-rsp", "--mdns-no-daap", "--mdns-no-cname", "--mdns-no-web"],
                                 label: "owntone")
        var library: [String: Any] = [:]
        let scanned = poll(timeout: 30, interval: 0.25) {
            guard self.process.isRunning else { return true }
            library = (try? self.json("GET", "/api/library")) ?? [:]
            return (library["songs"] as? Int ?? 0) >= songs && library["updating"] as? Bool == false
        }
        guard scanned, process.isRunning else { throw TestHostError("OwnTone did not scan its library: \(library) \(log.suffix(2000))") }
    }

    /// Deselects every output first: OwnTone 29.3 may crash ("double free") when stopped soon
    /// after playing to them.
    deinit {
        _ = try? request("PUT", "/api/outputs/set", body: #"{"outputs":[]}"#)
        process.stop(grace: 3)
    }

    /// The end of its log file, for failure messages.
    public var log: String {
        (try? String(contentsOfFile: host.directory + "/owntone/owntone.log", encoding: .utf8)).map { String($0.suffix(6000)) } ?? process.stderr
    }

    /// One JSON API request; returns the body.
    @discardableResult
    public func request(_ method: String, _ path: String, body: String? = nil) throws -> String {
        var arguments = ["-s", "-m", "10", "-X", method, "http://127.0.0.1:3689" + path]
        if let body { arguments += ["-H", "Content-Type: application/json", "-d", body] }
        let result = try host.run(curl, arguments, timeout: 15)
        guard result.status == 0 else { throw TestHostError("OwnTone \(method) \(path): curl \(result.status) \(result.stderr)") }
        return result.stdout
    }

    /// A JSON API request whose answer is an object.
    public func json(_ method: String, _ path: String) throws -> [String: Any] {
        let text = try request(method, path)
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw TestHostError("OwnTone \(path) answered \(text.prefix(300))")
        }
        return object
    }

    /// The speakers it has found.
    public func outputs() throws -> [Output] {
        let list = try json("GET", "/api/outputs")["outputs"] as? [[String: Any]] ?? []
        return list.map { Output(id: $0["id"] as? String ?? "", name: $0["name"] as? String ?? "", type: $0["type"] as? String ?? "",
                                 volume: $0["volume"] as? Int ?? -1) }
    }

    /// Waits until it has found the speakers named `names`.
    public func waitForOutputs(_ names: [String], timeout: Double = 20) throws -> [Output] {
        var found: [Output] = []
        poll(timeout: timeout, interval: 0.25) {
            found = ((try? self.outputs()) ?? []).filter { names.contains($0.name) }
            return found.count == names.count
        }
        guard found.count == names.count else { throw TestHostError("OwnTone found \(found.map(\.name)), not \(names): \(log.suffix(2000))") }
        return names.compactMap { name in found.first { $0.name == name } }
    }

    /// Plays the track titled `title` to `outputs`, each at `volume` (0–100).
    public func play(title: String, to outputs: [Output], volume: Int = 100) throws {
        try play(expression: "title is \"\(title)\"", to: outputs, volume: volume)
    }

    /// Queues the tracks a smart-playlist `expression` finds (`artist is "Test Artist"`) and
    /// plays them to `outputs`, each at `volume` (0–100).
    public func play(expression: String, to outputs: [Output], volume: Int = 100) throws {
        let ids = outputs.map { "\"\($0.id)\"" }.joined(separator: ",")
        try request("PUT", "/api/outputs/set", body: "{\"outputs\":[\(ids)]}")
        try request("PUT", "/api/player/volume?volume=\(volume)")
        for output in outputs { try request("PUT", "/api/player/volume?volume=\(volume)&output_id=\(output.id)") }
        let encoded = expression.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        try request("POST", "/api/queue/items/add?clear=true&expression=\(encoded)")
        try request("PUT", "/api/player/play")
    }

    /// The title of the queue item that plays (or is paused), if any.
    public func currentTitle() throws -> String? {
        guard let id = try json("GET", "/api/player")["item_id"] as? Int else { return nil }
        let items = try json("GET", "/api/queue")["items"] as? [[String: Any]] ?? []
        return items.first { $0["id"] as? Int == id }?["title"] as? String
    }

    /// Sets one output's volume (0–100) while it plays.
    public func setVolume(_ volume: Int, of output: Output) throws {
        try request("PUT", "/api/player/volume?volume=\(volume)&output_id=\(output.id)")
    }

    /// The player's state: `play`, `pause` or `stop`.
    public func state() throws -> String { try json("GET", "/api/player")["state"] as? String ?? "?" }

    /// Makes a library track: `seconds` of stereo noise (a signal that never repeats, so outputs
    /// can be aligned on it) as FLAC, tagged, with a cover beside it; returns the raw S16LE PCM
    /// the track decodes to.
    public static func makeTrack(in directory: String, title: String, seconds: Int) throws -> String {
        try TestHost.require(["ffmpeg"])
        let ffmpeg = TestHost.which("ffmpeg")!
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let flac = directory + "/track.flac", pcm = directory + "/../track.pcm", cover = directory + "/cover.jpg"
        let jobs: [[String]] = [
            ["-f", "lavfi", "-i", "anoisesrc=d=\(seconds):c=white:r=44100:a=0.25:s=7", "-f", "lavfi",
             "-i", "anoisesrc=d=\(seconds):c=pink:r=44100:a=0.3:s=11", "-filter_complex", "[0][1]amerge=inputs=2",
             "-ac", "2", "-sample_fmt", "s16", "-c:a", "flac", "-metadata", "title=\(title)", "-metadata", "artist=Test Artist",
             "-metadata", "album=Test Album", flac],
            ["-f", "lavfi", "-i", "color=c=0x3366cc:s=96x96", "-frames:v", "1", cover],
            ["-i", flac, "-f", "s16le", "-ac", "2", "-ar", "44100", pcm],
        ]
        for job in jobs {
            let result = try runCommand(ffmpeg, ["-loglevel", "error", "-y"] + job, timeout: 60)
            guard result.status == 0 else { throw TestHostError("ffmpeg: \(result.stderr)") }
        }
        return pcm
    }
}
