/// The contract's client ids: 8-128 characters of `[A-Za-z0-9_\-:.]`.
enum ClientIdentifier {
    static func isValid(_ id: String) -> Bool {
        (8...128).contains(id.utf8.count) && id.utf8.allSatisfy { b in
            (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == 95 || b == 45 || b == 58 || b == 46
        }
    }
}
