import CArgon2
import Foundation
import SurveyDomain

/// Console passwords: Argon2id (libargon2, the reference implementation) with OWASP's minimum
/// for it — 19 MiB of memory, 2 passes, 1 lane — a 16-byte random salt and a 32-byte hash, kept
/// as the standard encoded string (`$argon2id$v=19$m=19456,t=2,p=1$…`), so the parameters can
/// rise later without invalidating stored passwords. A sign-in or password change takes ~45 ms
/// on this machine (the request log's durationMs), nearly all of it the hash.
public enum Passwords {
    static let passes: UInt32 = 2
    static let memoryKiB: UInt32 = 19 * 1024
    static let lanes: UInt32 = 1
    static let saltLength = 16
    static let hashLength = 32
    public static let minimumLength = 10
    public static let maximumLength = 1024
    /// A password a person may choose: long enough, not too long, and not only white space.
    public static func check(_ password: String) throws {
        let rule = "at least \(minimumLength) characters, not only spaces, at most \(maximumLength) bytes"
        guard password.count >= minimumLength, password.utf8.count <= maximumLength else {
            throw ApiError(.validationFailed, "The password must be at least \(minimumLength) characters long.",
                           errors: [FieldError(path: "password", message: rule)])
        }
        guard password.contains(where: { !$0.isWhitespace }) else {
            throw ApiError(.validationFailed, "The password must not be only spaces: choose one with letters, digits or signs.",
                           errors: [FieldError(path: "password", message: rule)])
        }
    }

    /// Argon2 takes its 19 MiB from malloc. glibc serves a block that large with mmap and gives
    /// it back at free — until a freed mmapped block raises its threshold (up to 32 MiB), after
    /// which each block stays in its thread's arena: 60 concurrent sign-ins then kept 880 MB.
    /// A fixed threshold keeps large blocks mmapped, so the memory goes back after each check.
    private static let returnsMemory: Void = cargon2_map_large_blocks()

    /// Run through `PasswordChecks`, which bounds how many run at once.
    public static func hash(_ password: String) throws -> String {
        _ = returnsMemory
        let salt = Digest.randomBytes(saltLength)
        let length = argon2_encodedlen(passes, memoryKiB, lanes, UInt32(saltLength), UInt32(hashLength), Argon2_id)
        var encoded = [CChar](repeating: 0, count: length)
        let pwd = Array(password.utf8)
        let rc = argon2id_hash_encoded(passes, memoryKiB, lanes, pwd, pwd.count, salt, salt.count, hashLength, &encoded, length)
        guard rc == ARGON2_OK.rawValue else { throw ApiError(.internalError, "The password could not be hashed.") }
        return String(cString: encoded)
    }

    /// Run through `PasswordChecks`, which bounds how many run at once.
    public static func verify(_ password: String, _ encoded: String) -> Bool {
        _ = returnsMemory
        let pwd = Array(password.utf8)
        return argon2id_verify(encoded, pwd, pwd.count) == ARGON2_OK.rawValue
    }

    /// Verifying against this costs what verifying a real password costs: an unknown email takes
    /// as long to refuse as a wrong password.
    static let decoy: String = (try? hash("surveyd decoy password, never valid")) ?? ""
}
