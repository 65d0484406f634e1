import Foundation
import Testing
@testable import SurveyStorage

/// Committed pages reach the database file without the writer checkpointing: SQLite's automatic
/// checkpoint is off and the writer's own runs only every 64 commits, so with 20 commits only the
/// `Checkpointer` can have copied them.
@Suite struct CheckpointerTests {
    @Test func committedPagesReachTheDatabaseFileWithoutTheWriter() throws {
        let dir = TempDir()
        let db = try Database(.init(path: dir.db))
        defer { db.close(); _ = dir }
        func fileSize() -> Int { (try? FileManager.default.attributesOfItem(atPath: dir.db)[.size] as? Int) ?? 0 }
        try db.writer.submit { try $0.execute("CREATE TABLE filler (b BLOB)") }
        let before = fileSize()
        for _ in 0..<20 {
            try db.writer.submit { try $0.run("INSERT INTO filler VALUES (zeroblob(40000))") }
        }
        #expect(db.writerStats.commits < 64)
        let deadline = Date().addingTimeInterval(5)
        while fileSize() < before + 20 * 40_000 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(fileSize() >= before + 20 * 40_000, "the database file is \(fileSize()) bytes, \(before) before 800 kB were committed")
    }
}
