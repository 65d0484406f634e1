import Foundation

extension TestServer {
    /// Regular files under a directory of the data dir, recursively.
    func files(in sub: String) -> [String] { ServerProcess.regularFiles(under: dataDir + "/" + sub) }
}

enum Files {
    static func jpeg(_ size: Int = 2048, seed: UInt8 = 1) -> [UInt8] {
        var b: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00]
        while b.count < size - 2 { b.append(UInt8(truncatingIfNeeded: b.count &* 31) ^ seed) }
        return b + [0xFF, 0xD9]
    }
    static func png(_ size: Int = 1024) -> [UInt8] {
        var b: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        while b.count < size { b.append(UInt8(truncatingIfNeeded: b.count)) }
        return b
    }
}
