import Foundation

/// The last step of a pass: the phone's copy of each entity list the app asked for, downloaded
/// again only when the server's changed (`If-None-Match` with the stored `ETag`; 304 otherwise).
extension SyncEngine {
    /// What a path segment may hold as it is (RFC 3986 unreserved); a list's name is an XML name, so it is all of it.
    static let segment = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    func refreshEntityLists(_ session: Session, _ report: inout SyncReport) async throws {
        let owner = session.owner
        for name in configuration.entityLists {
            let path = "/v1/orgs/\(owner.organization)/entity-lists/\(name.addingPercentEncoding(withAllowedCharacters: Self.segment) ?? name)/entities.csv"
            let stored = try store.entityList(owner, name)
            // Taken before the request: what the server held then is in the copy it sends.
            let settling = try store.heldUnsettledEntityCommands(owner, list: name)
            var headers: [String: String] = [:]
            if let etag = stored?.etag { headers["If-None-Match"] = etag }
            let answer: IncomingAnswer
            do {
                answer = try await send(session, "GET", path, headers: headers)
            } catch {
                report.entityListsFailed[name] = "no answer: \(error.localizedDescription)"
                continue
            }
            if (300..<400).contains(answer.status) && answer.status != 304 {
                let target = AttemptOutcome.redirectTarget(answer.header("Location"), server: owner.server)
                report.redirectedTo = target
                report.entityListsFailed[name] = "HTTP \(answer.status) redirect" + (target.isEmpty ? "" : " to \(target)")
                continue
            }
            report.reachedServer = true
            switch answer.status {
            case 304 where stored != nil:
                try store.saveEntityList(owner, name, etag: stored?.etag, list: nil, settling: settling, at: now)
                report.entityListsUnchanged.append(name)
            case 200:
                let list: ServerEntityList
                do {
                    list = try EntityListCSVReader.read(answer.body)
                } catch {
                    // A damaged download never replaces a good copy.
                    report.entityListsFailed[name] = "the server's CSV could not be read: \(error.reason)"
                    continue
                }
                do {
                    try store.saveEntityList(owner, name, etag: answer.header("ETag"), list: list, settling: settling, at: now)
                    report.entityListsRefreshed.append(name)
                } catch let error as SQLiteError where error.isFull || error.isIO {
                    // Rolled back whole: the previous copy stands; the other lists may still fit.
                    report.entityListsFailed[name] = "not stored on this device: \(error)"
                }
            case 401:
                report.entityListsFailed[name] = "HTTP 401"
                try markSignInRequired(session, &report)
                return
            default:
                report.entityListsFailed[name] = "HTTP \(answer.status)"
            }
        }
    }
}
