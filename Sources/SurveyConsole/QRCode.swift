import CQRencode

/// A QR code of a text (an invitation link, an app token), encoded by libqrencode and drawn as an
/// inline SVG — one path of the dark modules, with the quiet zone — so a phone's camera can take
/// it from the screen. The markup is built from numbers only: no text of the code goes into it.
enum QRCode {
    static func svg(_ text: String, label: String) -> String? {
        guard let code = QRcode_encodeString8bit(text, 0, QR_ECLEVEL_M) else { return nil }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        let quiet = 4
        var path = ""
        for y in 0..<width {
            for x in 0..<width where code.pointee.data[y * width + x] & 1 == 1 {
                path += "M\(x + quiet) \(y + quiet)h1v1h-1z"
            }
        }
        let size = width + 2 * quiet
        // At least 4 pixels a module: a dense code (ODK Collect's settings) stays readable by a camera.
        let pixels = max(220, size * 4)
        return #"<svg class="qr" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \#(size) \#(size)" width="\#(pixels)" height="\#(pixels)" role="img" aria-label="\#(HTML.escape(label))" shape-rendering="crispEdges"><rect width="\#(size)" height="\#(size)" fill="white"/><path fill="black" d="\#(path)"/></svg>"#
    }
}
