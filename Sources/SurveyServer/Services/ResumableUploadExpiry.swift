import Foundation
import SurveyOperations
import SurveyStorage

extension ResumableUploadService {
    /// Housekeeping: unfinished uploads past their expiry lose their row and partial file. An
    /// upload with a request in progress is left for the next sweep.
    static func sweepExpired(database: Database, blobs: BlobStore, busy: BusySet) throws -> Int {
        let now = database.clock.nowMillis()
        let claimed = try database.read { try $0.expiredResumableUploadIds(now: now) }.filter { busy.claim($0) }
        defer { claimed.forEach(busy.release) }
        let removed = try database.expireResumableUploads(claimed, now: now)
        for id in removed { unlink(blobs.partialPath(uploadId: id)) }
        return removed.count
    }
}
