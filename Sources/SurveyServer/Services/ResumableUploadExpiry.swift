import SurveyOperations
import SurveyStorage

extension ResumableUploadService {
    /// Housekeeping: unfinished uploads past their expiry lose their row and partial file
    /// (`ResumableUploads.sweepExpired`; one with a request in progress is left for the next sweep).
    static func sweepExpired(database: Database, blobs: BlobStore, busy: BusySet) throws -> Int {
        try ResumableUploads.sweepExpired(database: database, blobs: blobs, busy: busy)
    }
}
