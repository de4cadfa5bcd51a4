import AirPlayCrypto
import AirPlayMedia
import AirPlaySender
import AirPlayTiming
import AirPlayWire
import FLACMedia
import Foundation
import GStreamerMedia
import Logging

extension StreamCommand {
    /// FLAC decoded by libFLAC as it is: 44.1 kHz 16-bit, or with `hiRes` (buffered mode, which
    /// carries 24-bit and 48 kHz ALAC) also 24-bit and 48 kHz; anything else (and standard input)
    /// through GStreamer, which converts it to CD audio.
    static func open(_ file: String, start: Double, hiRes: Bool) throws(MediaError) -> any PCMSource {
        if file == "-" { return try GStreamerPCMSource.standardInput() }
        if FLACFileSource.isFLAC(path: file), let flac = try? FLACFileSource(path: file, start: start, allowHiRes: hiRes) {
            // 48 kHz/16-bit goes out as Apple's 48 kHz/24-bit (no format code names 48/16).
            if flac.format.sampleRate == 48000, flac.format.bitsPerSample == 16 { return WidenedPCMSource(flac) }
            return flac
        }
        return try GStreamerPCMSource(path: file, start: start)
    }

    /// `--mode` as the links know it.
    var linkMode: ReceiverLinks.Mode {
        switch mode {
        case .realtime: .realtime
        case .buffered: .buffered
        case .auto: .auto
        }
    }

    /// The PTP grandmaster a buffered stream (or mixed group) plays on: ours, on UDP 319/320.
    static func servePTPClock() throws(SenderError) -> PTPGrandmaster {
        do {
            return try PTPGrandmaster(clockIdentity: PTPGrandmaster.randomClockIdentity(), logger: Logger(label: "airplay"))
        } catch {
            throw SenderError(.badInput, "buffered mode serves a PTP clock: \(error)")
        }
    }

    /// A `.tick` a second into the session's events (its progress line), until cancelled.
    static func ticks(_ continuation: AsyncStream<RAOPStreamSession.Event>.Continuation) -> Task<Void, Never> {
        Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                continuation.yield(.tick)
            }
        }
    }

    /// What the receivers show of the file: its tags, and what is left of it after `start`.
    static func item(_ tags: TrackTags, title: String, start: Double) -> DMAP.Item {
        var item = DMAP.Item()
        item.title = title
        item.artist = tags.artist
        item.album = tags.album
        item.genre = tags.genre
        item.durationMilliseconds = tags.duration.map { Int(max(0, $0 - start) * 1000) }
        return item
    }

    /// Each receiver as the display names it: what it is sent, and how it is timed.
    static func describe(_ links: [ReceiverLink], codec: BufferedCodec, format: PCMFormat) -> [String] {
        links.map { link in
            let ownClock = link.receiverTimeline == nil ? "" : ", on its own clock"
            guard !link.buffered else {
                let kilohertz = String(format: "%g", Double(format.sampleRate) / 1000)
                return "\(link.name) (\(codec == .aac ? "AAC-LC" : "ALAC") \(kilohertz) kHz/\(format.bitsPerSample)-bit, AirPlay 2 buffered\(ownClock))"
            }
            let kind = link.airPlay2 ? (link.ptpClock == nil ? ", AirPlay 2" : ", AirPlay 2 on PTP\(ownClock)") : link.encryptor == nil ? "" : ", RSA"
            return "\(link.name) (\(link.codec.rawValue)\(kind))"
        }
    }

    /// Takes receivers that join a playing buffered stream or mixed group (`airplay group
    /// add`): buffered where they take it (all of them with --mode buffered), else realtime on
    /// the group's timeline, on PTP where they follow it (`groupClock`).
    func joinServer(mode linkMode: ReceiverLinks.Mode, identity: RAOPClientIdentity, crypto: RAOPSenderCrypto?,
                    groupClock: PTPGrandmaster?, _ continuation: AsyncStream<RAOPStreamSession.Event>.Continuation) -> StreamControlServer? {
        let password = self.password, protocolVersion = self.protocolVersion, timing = self.timing
        return StreamControlServer { target in
            do throws(SenderError) {
                let address = try ReceiverResolver.resolve(target, needVideo: false, choose: { _ in nil })
                let link = try await ReceiverLinks.open(address, protocolVersion: linkMode == .buffered ? 2 : protocolVersion, mode: linkMode,
                                                        identity: identity, password: password, crypto: crypto)
                if StreamClockPlan.joinerOnPTP(StreamClockPlan.Receiver(link), timing: timing) { link.ptpClock = groupClock }
                Self.obeyRemoteCommands(link, continuation)
                let failure = await withCheckedContinuation { (waiter: CheckedContinuation<SenderError?, Never>) in
                    continuation.yield(.join(link, done: { waiter.resume(returning: $0) }))
                }
                return failure.map { "error \($0.message)" } ?? "ok \(address.name)"
            } catch {
                return "error \(error.message)"
            }
        }
    }
}
