import Foundation
import Testing
import SurveyDomain
@testable import SurveyStorage

/// Reading files the maintenance commands stream: a read error is reported, never a trap
/// (`FileHandle.readData(ofLength:)` traps on one; a directory in place of a file shows it).
@Suite struct FileReadingTests {
    @Test func hashingAFileStreamsItAndADirectoryIsNoFile() throws {
        let dir = NSTemporaryDirectory() + "surveyd-read-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bytes = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }  // more than one 1 MiB piece
        #expect(FileManager.default.createFile(atPath: dir + "/f", contents: Data(bytes)))
        let hashed = try #require(IntegrityCheck.hashFile(dir + "/f"))
        #expect(hashed.0 == bytes.count)
        #expect(hashed.1 == Digest.sha256Hex(bytes))
        #expect(IntegrityCheck.hashFile(dir) == nil)
        #expect(IntegrityCheck.hashFile(dir + "/missing") == nil)
    }

    @Test func aCopyFromSomethingUnreadableThrows() throws {
        let dir = NSTemporaryDirectory() + "surveyd-copy-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir + "/sub", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(throws: (any Error).self) { try Backup.copyDurably(from: dir + "/sub", to: dir + "/copy") }
        let bytes = [UInt8](repeating: 42, count: (1 << 20) + 5)
        #expect(FileManager.default.createFile(atPath: dir + "/f", contents: Data(bytes)))
        try Backup.copyDurably(from: dir + "/f", to: dir + "/copy")
        #expect(FileManager.default.contents(atPath: dir + "/copy") == Data(bytes))
        try Backup.copyDurably(from: dir + "/f", to: dir + "/head", limit: 10)
        #expect(FileManager.default.contents(atPath: dir + "/head") == Data(bytes.prefix(10)))
    }
}
