import AirPlayNowPlaying
import AirPlayTiming
import AirPlayWire
import NIOCore

/// The stateless wire codecs both programs share: control-port framing both ways, SDP and
/// Transport, RAOP and PTP datagrams, DMAP, TXT records and DACP paths.
enum WireTargets {
    static let all: [FuzzTarget] = [controlRequest, senderResponse, sdp, rtspTransport, raopPacket, ptp, dmap, txtRecord, remoteCommand, dataStream]

    /// An AirPlay 2 data stream's decrypted bytes (type 130), in up to four reads: the same
    /// messages however the bytes were cut, each written back as the bytes it came from, never
    /// more held than one message's limit; a payload's MediaRemote messages split within bounds.
    static let dataStream = FuzzTarget("data-stream", "AirPlay 2 data-stream messages (type 130), split across reads") { bytes in
        var input = FuzzInput(bytes)
        let reads = input.pieces(4)
        var split = DataStreamMessage.Reader(), whole = DataStreamMessage.Reader()
        var pieces: [DataStreamMessage] = []
        do {
            for read in reads { pieces += try split.read(read) }
            precondition(split.pendingCount <= DataStreamMessage.maximumLength, "a reader held more than a message")
        } catch {
            return
        }
        let all = reads.flatMap { $0 }
        let once = (try? whole.read(all)) ?? []
        precondition(once == pieces, "messages depend on how the bytes were read")
        precondition(pieces.flatMap(\.encoded) == Array(all.prefix(all.count - split.pendingCount)), "a message must write back as read")
        for message in pieces {
            let parts = MediaRemoteProtocolMessages.split(message.payload)
            precondition(parts.count <= MediaRemoteProtocolMessages.maximumCount)
            if !parts.isEmpty { precondition(MediaRemoteProtocolMessages.split(MediaRemoteProtocolMessages.join(parts)) == parts) }
        }
    }

    /// The control port's request framing (HTTP and RTSP), fed in up to four reads as TCP
    /// delivers them. Every message is a request or a rejection with a 4xx/5xx status, the
    /// decoder never holds more than its limits, and the same bytes in one read give the same
    /// messages.
    static let controlRequest = FuzzTarget("control-request", "HTTP and RTSP requests on the control port, split across reads") { bytes in
        var input = FuzzInput(bytes)
        let reads = input.pieces(4)
        var decoder = AirPlayRequestDecoder()
        var split: [InboundRequest] = []
        var reading = ByteBuffer()
        for read in reads {
            reading.writeBytes(read)
            while let message = decoder.next(from: &reading) { split.append(message) }
        }
        var whole: [InboundRequest] = []
        var oneRead = AirPlayRequestDecoder()
        var buffer = ByteBuffer(bytes: reads.flatMap { $0 })
        while let message = oneRead.next(from: &buffer) { whole.append(message) }
        precondition(split == whole, "framing depends on how the bytes were read")
        for message in split {
            switch message {
            case .request(let request):
                precondition(request.body.readableBytes <= RequestLimits.default.maxBodyBytes(method: request.method, target: request.target))
                _ = (request.path, request.queryItems, request.cseq)
            case .rejected(let rejection):
                precondition((400..<600).contains(rejection.status), "a rejection must be an error status")
            }
        }
    }

    /// What a receiver answers a sender (`airplay`'s RTSP/HTTP response framing), in pieces.
    static let senderResponse = FuzzTarget("sender-response", "RTSP and HTTP responses as the sender reads them") { bytes in
        var input = FuzzInput(bytes)
        let decoder = AirPlayResponseDecoder()
        var buffer = ByteBuffer()
        for read in input.pieces(3) {
            buffer.writeBytes(read)
            do {
                while let response = try decoder.next(from: &buffer) { _ = response.headers["Content-Type"] }
            } catch {
                return
            }
        }
    }

    /// An ANNOUNCE body. One that reads, written again, reads the same.
    static let sdp = FuzzTarget("sdp", "RAOP ANNOUNCE session descriptions (SDP)") { bytes in
        var input = FuzzInput(bytes)
        let text = input.text()
        _ = try? RAOPStreamDescription(sdp: text)
        if let announcement = try? RAOPAnnouncement(parsing: text) {
            precondition((try? RAOPAnnouncement(parsing: announcement.encoded)) == announcement, "an announcement does not read back as written")
        }
    }

    /// `Transport`, `RTP-Info` and similar `spec;name=value` headers.
    static let rtspTransport = FuzzTarget("rtsp-transport", "RTSP Transport and RTP-Info header values") { bytes in
        var input = FuzzInput(bytes)
        let text = input.text()
        let transport = RTSPTransport(parsing: text)
        for name in ["control_port", "timing_port", "server_port"] { _ = transport.port(name); _ = transport[name] }
        let info = RTPInfo(parsing: text)
        precondition(RTPInfo(parsing: info.headerValue) == info, "RTP-Info does not read back as written")
    }

    /// Any datagram on a RAOP session's audio, control or timing port. An audio packet written
    /// back out reads back the same.
    static let raopPacket = FuzzTarget("raop-packet", "RAOP UDP datagrams: audio, resend, sync, timing") { bytes in
        guard let packet = RAOPPacket.parse(bytes) else { return }
        if case .audio(let audio) = packet {
            precondition(RAOPPacket.parse(audio.bytes) == packet, "an audio packet does not read back as written")
            precondition(RAOPPacket.parse(RAOPPacket.retransmission(of: audio.bytes, sequence: audio.sequence)) == .retransmitted(audio),
                         "a retransmission does not read back as written")
        }
        bytes.withUnsafeBytes { _ = RAOPAudioPacket.header(of: $0) }
    }

    /// PTP (IEEE 1588 v2) event and general messages, and the datagrams airplayd instances share
    /// one PTP follower with. Each reads back as written. Then the follower takes what any host
    /// on the LAN may send it: the input as up to 32 records (a length byte, then a datagram),
    /// arriving 10 ms apart, its Delay_Reqs sent as it asks; its clock is then read both ways,
    /// as an anchor would (any time a sender names).
    static let ptp = FuzzTarget("ptp", "PTP messages and the PTP-share datagrams between instances, and a follower fed them") { bytes in
        if let message = try? PTPMessage.decode(bytes) {
            let written = message.encoded()
            precondition((try? PTPMessage.decode(written))?.encoded() == written, "a PTP message does not read back as written")
        }
        if let shared = PTPShareMessage.decode(bytes) {
            // Compared as bytes: a NaN read from the wire never equals itself.
            let written = shared.encoded()
            precondition(PTPShareMessage.decode(written)?.encoded() == written, "a share message does not read back as written")
            if case .snapshot(let masters) = shared {
                for master in masters { _ = master.masterTime(at: 1_000_000_000_000).map { master.localTime(ofMaster: $0, near: 1_000_000_000_000) } }
            }
        }
        var follower = PTPFollower(identity: ptpIdentity)
        var rest = bytes[...]
        var now: Int64 = 1_000_000_000_000
        for _ in 0..<32 {
            guard let length = rest.popFirst() else { break }
            if let message = try? PTPMessage.decode(Array(rest.prefix(Int(length)))) {
                follower.receive(message, from: "10.0.0.1", at: now)
            }
            rest = rest.dropFirst(Int(length))
            for case .sendDelayRequest(let request, _) in follower.tick(now: now) {
                follower.delayRequestSent(sequence: request.header.sequence, at: now + 50_000)
            }
            now += 10_000_000
        }
        let master = follower.masterTime(at: now)
        for time in [master, Int64.min, Int64.max, bytes.first.map { Int64($0) << 56 }].compactMap({ $0 }) {
            _ = follower.localTime(ofMaster: time, now: now)
        }
        _ = follower.statuses(now: now)
    }

    /// The follower's own port identity in the `ptp` target (its Delay_Resps name it).
    static let ptpIdentity = PTPPortIdentity(clockIdentity: 0x02FC_00FF_FE00_0001, port: 1)

    /// DMAP track metadata as RAOP senders send it.
    static let dmap = FuzzTarget("dmap", "DMAP metadata bodies (SET_PARAMETER application/x-dmap-tagged)") { bytes in
        _ = try? DMAP.parseItem(bytes)
        _ = try? DMAPField.fields(of: bytes)
    }

    /// A receiver's TXT record as `airplay` reads it from Avahi (NUL separates the strings).
    static let txtRecord = FuzzTarget("txt-record", "mDNS TXT records of _airplay._tcp and _raop._tcp") { bytes in
        var input = FuzzInput(bytes)
        let name = String(decoding: input.pieces(2)[0], as: UTF8.self)
        let strings = input.text().split(separator: "\u{0}", omittingEmptySubsequences: false).map(String.init)
        let txt = TXTRecord(strings: strings)
        for type in ["_airplay._tcp", "_raop._tcp"] { _ = ReceiverRecord(serviceType: type, instanceName: name, txt: txt) }
        for key in ["features", "ft", "flags", "sf", "deviceid"] {
            guard let value = txt[key] else { continue }
            _ = FeatureSet(txtValue: value)
            _ = StatusFlags(txtValue: value)
            _ = DeviceID(value)
        }
        _ = DeviceID.splitRAOPInstanceName(name)
    }

    /// Remote-control words from every surface: DACP paths (a receiver asking `airplay stream`),
    /// MQTT payloads, the page's and `/now-playing/remote` commands.
    static let remoteCommand = FuzzTarget("remote-command", "DACP paths and remote-control command words") { bytes in
        var input = FuzzInput(bytes)
        let text = input.text()
        if let command = DACPCommand(path: text) { precondition(DACPCommand(path: command.path) == command, "a DACP path does not read back") }
        _ = RemoteCommand(name: text)
    }
}
