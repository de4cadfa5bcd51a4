@testable import AirPlayHLS
import Testing

/// Qualifiers pick variants the way the WWDC21 predicates do, in text.
@Suite struct VariantQualifierTests {
    static let variants: [VariantDescription] = {
        let master = try! PlaylistParser.parseMaster(try! Fixtures.text("everything-master.m3u8"))
        return VariantDescription.all(master)
    }()

    func indices(_ expression: String) throws -> [Int] {
        let qualifier = try VariantQualifier(parsing: expression)
        return Self.variants.filter { qualifier.matches($0) }.map(\.index)
    }

    @Test func theSeedsPredicates() throws {
        #expect(try indices("peakBitRate < 5000000") == [0])
        #expect(try indices("videoRange == PQ") == [2])
        #expect(try indices("videoRange == PQ && peakBitRate < 5000000").isEmpty)
        #expect(try indices("videoAttributes.videoRange == PQ || peakBitRate < 5000000") == [0, 2])
    }

    @Test func fieldsOperatorsAndGrouping() throws {
        #expect(try indices("audio.channels >= 6") == [1, 2])
        #expect(try indices("video.codec == hvc1") == [1, 2])
        #expect(try indices("resolution >= 1920x1080") == [1, 2])
        #expect(try indices("resolution == 640x360") == [0])
        #expect(try indices("!(video.codec == hvc1)") == [0])
        #expect(try indices("videoRange > SDR && (height <= 1080 || hdcpLevel == TYPE-0)") == [1])
        #expect(try indices("audio.language == de") == [0])
        #expect(try indices("subtitles.language == 'fr'") == [0, 1, 2])
        #expect(try indices("averageBitRate <= 4200000") == [0, 1])
        #expect(try indices("frameRate > 30") == [1, 2])
        #expect(try indices("audio.codec != ec-3") == [0])
    }

    @Test func theBestMatchIsTheRichest() throws {
        let best = VariantQualifier.best(Self.variants, matching: try VariantQualifier(parsing: "peakBitRate < 10000000"))
        #expect(best?.index == 1)
        #expect(VariantQualifier.best(Self.variants, matching: nil)?.index == 2)
    }

    @Test(arguments: [
        ("peakBitRate <", 14, "expected a value"),
        ("bitrate < 5", 1, "unknown field"),
        ("peakBitRate ~ 5", 13, "expected =="),
        ("videoRange == XDR", 15, "SDR, HLG or PQ"),
        ("resolution > 1080p", 14, "WIDTHxHEIGHT"),
        ("(peakBitRate < 5", 17, "expected )"),
        ("peakBitRate < 5 peakBitRate", 17, "unexpected"),
        ("video.codec < hvc1", 13, "== or != only"),
        ("peakBitRate < five", 15, "needs a number"),
        ("", 1, "ends too soon"),
    ])
    func badExpressionsPointAtTheColumn(text: String, column: Int, message: String) {
        do {
            _ = try VariantQualifier(parsing: text)
            Issue.record("parsed \(text)")
        } catch {
            #expect(error.column == column, "\(text): \(error)")
            #expect(error.message.contains(message), "\(text): \(error)")
        }
    }

    /// Nesting and length are bounded, since matching and freeing the tree recurse: 32 levels of
    /// parentheses or `!` and 256 comparisons are fine, one more is refused (20 KB of `((((`
    /// once overflowed the stack).
    @Test func nestingAndLengthAreBounded() throws {
        let deep = String(repeating: "(", count: 32) + "width > 1" + String(repeating: ")", count: 32)
        #expect(try VariantQualifier(parsing: deep) == VariantQualifier(parsing: "width > 1"))
        #expect(throws: VariantQualifier.Problem.self) { try VariantQualifier(parsing: "(" + deep + ")") }
        #expect(throws: VariantQualifier.Problem.self) { try VariantQualifier(parsing: String(repeating: "!", count: 33) + "width > 1") }
        #expect(throws: VariantQualifier.Problem.self) { try VariantQualifier(parsing: String(repeating: "(!", count: 10_000)) }
        let long = Array(repeating: "width > 1", count: 256).joined(separator: " && ")
        #expect(try VariantQualifier(parsing: long).matches(Self.variants[2]) == true)
        do {
            _ = try VariantQualifier(parsing: long + " || height > 1")
            Issue.record("257 comparisons parsed")
        } catch {
            #expect(error.message.contains("more than 256 comparisons"), "\(error)")
        }
    }

    /// The canonical text has only the parentheses grouping needs, and reads back as the same
    /// qualifier; a flat chain of the longest length allowed does too (with a pair of
    /// parentheses per operator it read back 255 levels deep, past the bound).
    @Test func canonicalTextParsesToTheSameQualifier() throws {
        let qualifier = try VariantQualifier(parsing: "!(a.b == 1)".replacingOccurrences(of: "a.b", with: "audio.channels")
            + " || videoRange == PQ && peakBitRate < 5000000")
        #expect(try VariantQualifier(parsing: qualifier.description) == qualifier)
        #expect(qualifier.description == "!audio.channels == 1 || videoRange == PQ && peakBitRate < 5000000")
        let grouped = try VariantQualifier(parsing: "width > 1 && (height > 1 || !(frameRate > 30 && width < 9)) || height < 2")
        #expect(grouped.description == "width > 1 && (height > 1 || !(frameRate > 30 && width < 9)) || height < 2")
        let long = try VariantQualifier(parsing: Array(repeating: "width > 1", count: 256).joined(separator: " && "))
        #expect(try VariantQualifier(parsing: long.description) == long)
    }
}
