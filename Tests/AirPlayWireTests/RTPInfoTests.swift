import AirPlayWire
import Testing

/// `RTP-Info` as RAOP senders write it on RECORD, FLUSH and SET_PARAMETER, and as the box reads
/// it: the first packet's sequence number and the first frame's RTP time after the request.
@Suite struct RTPInfoTests {
    @Test func recordAndFlushCarryBothParts() {
        #expect(RTPInfo(sequence: 1000, rtpTime: 352_000).headerValue == "seq=1000;rtptime=352000")
        #expect(RTPInfo(parsing: "seq=1000;rtptime=352000") == RTPInfo(sequence: 1000, rtpTime: 352_000))
    }

    /// A volume or progress change names only the moment it applies from.
    @Test func setParameterCarriesTheRTPTimeAlone() {
        #expect(RTPInfo(rtpTime: 4_294_967_295).headerValue == "rtptime=4294967295")
        #expect(RTPInfo(parsing: "rtptime=4294967295") == RTPInfo(rtpTime: 4_294_967_295))
    }

    /// Senders differ: RFC 2326's `url=` first, spaces, another order, other parts, a case.
    @Test(arguments: [
        "url=rtsp://10.0.0.2/1;seq=7;rtptime=99",
        " rtptime=99 ; seq=7 ",
        "seq=7;ssrc=0x1234;rtptime=99",
        "SEQ=7;RtpTime=99",
    ])
    func whatSendersWriteIsReadLiberally(text: String) {
        #expect(RTPInfo(parsing: text) == RTPInfo(sequence: 7, rtpTime: 99))
    }

    /// A number out of range or not a number leaves its part out, never a wrong value.
    @Test func aPartThatIsNotANumberInRangeIsLeftOut() {
        #expect(RTPInfo(parsing: "seq=70000;rtptime=99") == RTPInfo(rtpTime: 99))
        #expect(RTPInfo(parsing: "seq=7;rtptime=-1") == RTPInfo(sequence: 7))
        #expect(RTPInfo(parsing: "seq;rtptime") == RTPInfo())
        #expect(RTPInfo().headerValue == "")
    }
}
