import AirPlayDaemon
import Testing

/// The TOML the configuration file is read with: what it accepts, and the line it names for
/// what it refuses.
@Suite struct TOMLDocumentTests {
    @Test func keysValuesAndComments() throws {
        let document = try TOMLDocument(parsing: """
            # a comment
            name = "Living \\"Room\\" \\u00e9"   # trailing comment
            path = 'C:\\raw\\path'
            "quoted key" = 1
            port = 7_000
            mask = 0xFF
            gain = -1.5e0
            video = true
            audio = false
            """)
        #expect(document.root["name"] == .string("Living \"Room\" é"))
        #expect(document.root["path"] == .string("C:\\raw\\path"))
        #expect(document.root["quoted key"] == .integer(1))
        #expect(document.root["port"] == .integer(7000))
        #expect(document.root["mask"] == .integer(255))
        #expect(document.root["gain"] == .float(-1.5))
        #expect(document.root["video"] == .bool(true) && document.root["audio"] == .bool(false))
    }

    @Test func arraysMaySpanLinesWithCommentsAndATrailingComma() throws {
        let document = try TOMLDocument(parsing: """
            interfaces = [
              "eth0",  # wired
              "wlan0",
            ]
            empty = []
            after = 1
            """)
        #expect(document.root["interfaces"] == .array([.string("eth0"), .string("wlan0")]))
        #expect(document.root["empty"] == .array([]))
        #expect(document.root["after"] == .integer(1))
    }

    @Test func tablesHoldTheirKeys() throws {
        let document = try TOMLDocument(parsing: "top = 1\n[mqtt]\nhost = \"broker\"\nport = 1883\n")
        #expect(document.root["top"] == .integer(1))
        #expect(document.root["mqtt"] == .table(["host": .string("broker"), "port": .integer(1883)]))
    }

    @Test(arguments: [
        ("a = 1\na = 2", 2, "twice"),
        ("a = 1\n\nb = = 2", 3, "value"),
        ("a = \"open", 1, "not closed"),
        ("a = 1 2", 1, "unexpected"),
        ("a = 007", 1, "leading zeros"),
        ("a = yes", 1, "not a value"),
        ("a = 1979-05-27", 1, "dates"),
        ("a = {b = 1}", 1, "inline tables"),
        ("a = \"\"\"x\"\"\"", 1, "multi-line"),
        ("a.b = 1", 1, "dotted"),
        ("x = 1\n[t]\nk = 1\nk = 2", 4, "twice"),
        ("= 1", 1, "key"),
        ("a = [1, 2", 1, "not closed"),
        ("a = \"\\q\"", 1, "escape"),
    ])
    func refusalsNameTheLine(text: String, line: Int, hint: String) {
        do {
            _ = try TOMLDocument(parsing: text)
            Issue.record("\(text) parsed")
        } catch {
            #expect(error.line == line, "\(error)")
            #expect(error.message.contains(hint), "\(error)")
        }
    }
}
