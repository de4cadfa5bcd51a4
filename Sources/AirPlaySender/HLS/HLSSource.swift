import AirPlayHLS
import Foundation

/// Playlists from a URL or a file, and qualifiers from text, with errors the CLI can report.
public enum HLSSource {
    /// The parsed playlist and the URL relative URIs resolve against.
    public static func load(_ location: String, headers: [String: String], caFile: String?) async throws(SenderError) -> (Playlist, URL) {
        var ignored = Duration.zero
        return try await load(location, headers: headers, caFile: caFile, parseTime: &ignored)
    }

    /// The same, noting how long the parse alone took.
    public static func load(_ location: String, headers: [String: String], caFile: String?, parseTime: inout Duration)
        async throws(SenderError) -> (Playlist, URL) {
        let text: String, base: URL
        if let url = URL(string: location), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" {
            (text, base) = try await HTTPFetcher(headers: headers, caFile: caFile).playlist(url)
        } else {
            let file = URL(fileURLWithPath: location)
            guard let contents = try? String(contentsOf: file, encoding: .utf8) else {
                throw SenderError(.badInput, "\(location) is neither an http(s) URL nor a readable playlist file")
            }
            (text, base) = (contents, file)
        }
        do {
            let started = ContinuousClock.now
            let playlist = try PlaylistParser.parse(text)
            parseTime = ContinuousClock.now - started
            return (playlist, base)
        } catch {
            throw SenderError(.badInput, "\(location): \(error)")
        }
    }

    /// A qualifier, or a bad-input error pointing at the column.
    public static func qualifier(_ text: String) throws(SenderError) -> VariantQualifier {
        do {
            return try VariantQualifier(parsing: text)
        } catch {
            throw SenderError(.badInput, "--prefer \"\(text)\": \(error)\n  \(text)\n  \(String(repeating: " ", count: max(0, error.column - 1)))^")
        }
    }
}
