import CArgon2
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

    public static func hash(_ password: String) throws -> String {
        let salt = Digest.randomBytes(saltLength)
        let length = argon2_encodedlen(passes, memoryKiB, lanes, UInt32(saltLength), UInt32(hashLength), Argon2_id)
        var encoded = [CChar](repeating: 0, count: length)
        let pwd = Array(password.utf8)
        let rc = argon2id_hash_encoded(passes, memoryKiB, lanes, pwd, pwd.count, salt, salt.count, hashLength, &encoded, length)
        guard rc == ARGON2_OK.rawValue else { throw ApiError(.internalError, "The password could not be hashed.") }
        return String(cString: encoded)
    }

    public static func verify(_ password: String, _ encoded: String) -> Bool {
        let pwd = Array(password.utf8)
        return argon2id_verify(encoded, pwd, pwd.count) == ARGON2_OK.rawValue
    }

    /// Verifying against this costs what verifying a real password costs: an unknown email takes
    /// as long to refuse as a wrong password.
    static let decoy: String = (try? hash("surveyd decoy password, never valid")) ?? ""
}
