import AirPlayWire
import Foundation
import Testing

@testable import AirPlaySender

/// `airplay play`'s `--playlists auto`: a local HLS video is handed over as an iPhone hands it
/// (FCUP) only to receivers an iPhone would hand it to, and served by URL to every other.
@Suite struct PlaylistDeliveryTests {
    /// The features the receivers advertise (`_airplay._tcp` `features`).
    static let appleTV = FeatureSet(txtValue: "0x4A7FDFD5,0xBC157FDE")!
    static let uxPlayWithHLS = FeatureSet(rawValue: 0x5A7F_FEE6 | 0b1_0001)
    static let uxPlayWithoutHLS = FeatureSet(rawValue: 0x5A7F_FEE6)
    static let kodi = FeatureSet(rawValue: 0x20F7)
    /// airplayd's video bits in its Apple profile (`ReceiverCapabilities.features`).
    static let airplayd: FeatureSet = [.video, .videoVolumeControl, .videoHTTPLiveStreams, .homeKitPairing, .coreUtilsPairing, .unifiedMediaControl]

    @Test func anIPhonesReceiversTakeTheHandOver() {
        #expect(VideoPlaySession.PlaylistDelivery.handOverChoice(for: Self.appleTV) == .fcup)
        #expect(VideoPlaySession.PlaylistDelivery.handOverChoice(for: Self.uxPlayWithHLS) == .fcup)
        #expect(VideoPlaySession.PlaylistDelivery.handOverChoice(for: Self.airplayd) == .fcup)
    }

    /// Kodi plays video and HLS but opens no FairPlay or AirPlay 2 session; UxPlay without
    /// `-hls` plays no video URLs; an AirPlay 2 speaker plays no video.
    @Test func othersGetURLs() {
        #expect(VideoPlaySession.PlaylistDelivery.handOverChoice(for: Self.kodi) == .url)
        #expect(VideoPlaySession.PlaylistDelivery.handOverChoice(for: Self.uxPlayWithoutHLS) == .url)
        #expect(VideoPlaySession.PlaylistDelivery.handOverChoice(for: [.audio, .bufferedAudio, .coreUtilsPairing]) == .url)
        #expect(VideoPlaySession.PlaylistDelivery.handOverChoice(for: []) == .url)
    }

    /// Only a local `.m3u8` (or a folder holding one) can be handed over: a URL is played as it
    /// is, and a file is served.
    @Test func onlyALocalPlaylistIsHandedOver() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("delivery-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("hls"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("#EXTM3U\n".utf8).write(to: folder.appendingPathComponent("hls/index.m3u8"))
        try Data([0, 0, 0, 24]).write(to: folder.appendingPathComponent("clip.mp4"))
        #expect(VideoPlaySession.isLocalHLSPlaylist(folder.path + "/hls"))
        #expect(VideoPlaySession.isLocalHLSPlaylist(folder.path + "/hls/index.m3u8"))
        #expect(!VideoPlaySession.isLocalHLSPlaylist(folder.path + "/clip.mp4"))
        #expect(!VideoPlaySession.isLocalHLSPlaylist("http://192.0.2.1/index.m3u8"))
        #expect(!VideoPlaySession.isLocalHLSPlaylist(folder.path + "/missing.m3u8"))
    }
}
