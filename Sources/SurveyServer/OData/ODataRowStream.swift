import SurveyHTTP
import SurveyOData

/// A feed's rows answered as one response, read a page at a time as libmicrohttpd asks for
/// bytes: the body up to its first row, each page's rows (the next page read only once the
/// last is sent, each from its own snapshot), then the closing `]}`. A page that fails to read
/// ends the body without its last chunk, so the client sees it was cut short.
final class ODataRowStream: BodySource, @unchecked Sendable {
    // @unchecked: libmicrohttpd asks one connection's body for bytes one call at a time.
    private var pending: [UInt8]
    private var offset = 0
    /// The `$skiptoken` of the page to read next; nil once the last is read.
    private var next: String?
    private var wroteRow: Bool
    private var finished = false
    /// The rows sent so far (an entity list's `$top` counts down by them).
    private var delivered: Int
    private let nextPage: (_ token: String, _ delivered: Int) throws -> ODataFeed.Page

    init(head: [UInt8], first: ODataFeed.Page, nextPage: @escaping (_ token: String, _ delivered: Int) throws -> ODataFeed.Page) {
        pending = head + first.rows
        next = first.next
        wroteRow = first.rowCount > 0
        delivered = first.rowCount
        self.nextPage = nextPage
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while offset == pending.count {
            if finished { return 0 }
            pending.removeAll(keepingCapacity: true)
            offset = 0
            guard let token = next else {
                pending += ODataFeed.tail
                finished = true
                continue
            }
            let page: ODataFeed.Page
            do { page = try nextPage(token, delivered) } catch {
                StandardError.line("surveyd: an OData response stopped part-way: \(error)")
                throw error
            }
            if page.rowCount > 0 {
                if wroteRow { pending.append(UInt8(ascii: ",")) }
                pending += page.rows
                wroteRow = true
                delivered += page.rowCount
            }
            // A page without rows and with a next token would never end: the last one is said by its token alone.
            next = page.rowCount > 0 ? page.next : nil
        }
        let n = min(buffer.count, pending.count - offset)
        guard n > 0, let target = buffer.baseAddress else { return 0 }
        pending.withUnsafeBytes { src in
            if let base = src.baseAddress { target.copyMemory(from: base + offset, byteCount: n) }
        }
        offset += n
        return n
    }

    func close() {}
}
