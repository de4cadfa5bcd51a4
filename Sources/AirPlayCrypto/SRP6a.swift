internal import COpenSSL

/// SRP-6a (RFC 5054) as HAP pair-setup uses it: the 3072-bit group with g = 5, SHA-512, user
/// name `Pair-Setup` and the PIN as password. Written on OpenSSL's BIGNUM because OpenSSL's own
/// SRP is SHA-1 only and deprecated.
///
/// Byte encodings follow what every HAP peer computes (pyatv/srptools, shairport-sync, Apple):
/// `k` and `u` hash their inputs left-padded to 384 bytes; `A`, `B` and `S` are otherwise
/// minimal big-endian; salt, `K` (= H(S), 64 bytes) and the proofs stay fixed-width arrays.
public enum SRP {
    /// The HAP user name.
    public static let pairSetupUser = "Pair-Setup"

    /// RFC 5054's 3072-bit prime.
    static let primeHex = """
        FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD\
        EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED\
        EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF0598DA48361C55D39A69163FA8FD24CF5F\
        83655D23DCA3AD961C62F356208552BB9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B\
        E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF6955817183995497CEA956AE515D2261898FA0510\
        15728E5A8AAAC42DAD33170D04507A33A85521ABDF1CBA64ECFB850458DBEF0A8AEA71575D060C7DB3970F85A6E1E4C7\
        ABF5AE8CDB0933D71E8C94E04A25619DCEE3D2261AD2EE6BF12FFA06D98A0864D87602733EC86A64521F2B18177B200C\
        BBE117577A615D6C770988C0BAD946E208E24FA074E5AB3143DB5BFCE0FD108E4B82D120A93AD2CAFFFFFFFFFFFFFFFF
        """
    /// The group's modulus length in bytes.
    public static let length = 384
}

/// The receiver's side: it knows the PIN, sends salt and `B` (M2), checks the sender's proof
/// (M3) and answers with its own (M4).
public final class SRPServer: @unchecked Sendable {
    // `@unchecked Sendable`: immutable after init; the BIGNUMs are only read, and each call
    // makes its own BN_CTX.
    private let group: SRPGroup
    private let verifier: BigNumber
    private let privateKey: BigNumber
    private let user: String
    /// The 16-byte salt sent in M2.
    public let salt: [UInt8]
    /// `B`, minimal big-endian, sent in M2.
    public let publicKey: [UInt8]

    /// A session for `password`, with `salt` (16 bytes) and the private `b` (32 random bytes; fixed in tests).
    public init(user: String = SRP.pairSetupUser, password: String, salt: [UInt8], privateKey b: [UInt8]) throws(CryptoError) {
        group = try SRPGroup.hap()
        let context = try BigNumberContext()
        self.user = user
        self.salt = salt
        let x = try BigNumber(bytes: SHA512.hash(salt, SHA512.hash(Array("\(user):\(password)".utf8))))
        verifier = try group.g.modExp(x, group.N, context.pointer)
        privateKey = try BigNumber(bytes: b)
        // B = (k·v + g^b) mod N
        let kv = try group.k.modMul(verifier, group.N, context.pointer)
        let gb = try group.g.modExp(privateKey, group.N, context.pointer)
        publicKey = try kv.modAdd(gb, group.N, context.pointer).bytesMinimal()
    }

    /// Checks M3's `A` and proof. Returns M4's proof and the 64-byte session key `K`; throws
    /// when `A` is not usable or the proof is wrong (a wrong PIN).
    public func verify(clientPublicKey: [UInt8], clientProof: [UInt8]) throws(CryptoError) -> (serverProof: [UInt8], sessionKey: [UInt8]) {
        guard clientProof.count == 64, (1...SRP.length).contains(clientPublicKey.count) else {
            throw CryptoError(description: "SRP: A must be 1 to 384 bytes and the proof 64")
        }
        let context = try BigNumberContext()
        let a = try BigNumber(bytes: clientPublicKey)
        // A ≡ 0 (mod N) would make S = 0 whatever the PIN: the classic SRP bypass.
        guard try !a.isZero(modulo: group.N, context.pointer) else { throw CryptoError(description: "SRP: A is zero modulo N") }
        let aBytes = a.bytesMinimal()
        let u = try BigNumber(bytes: SHA512.hash(group.padded(aBytes), group.padded(publicKey)))
        // S = (A · v^u)^b mod N
        let vu = try verifier.modExp(u, group.N, context.pointer)
        let s = try a.modMul(vu, group.N, context.pointer).modExp(privateKey, group.N, context.pointer)
        let key = SHA512.hash(s.bytesMinimal())
        let expected = group.clientProof(user: user, salt: salt, clientPublicKey: aBytes, serverPublicKey: publicKey, sessionKey: key)
        guard constantTimeEqual(expected, clientProof) else { throw CryptoError(description: "SRP: the proof is wrong (wrong PIN)") }
        return (SHA512.hash(aBytes, clientProof, key), key)
    }
}

/// The sender's side: from M2's salt and `B`, makes M3's `A` and proof, and checks M4's proof.
public final class SRPClient: Sendable {
    /// `A`, minimal big-endian, sent in M3.
    public let publicKey: [UInt8]
    /// The proof sent in M3.
    public let proof: [UInt8]
    /// The 64-byte session key `K`.
    public let sessionKey: [UInt8]

    /// A session for `password` against M2's `salt` and `B`, with the private `a` (32 random bytes; fixed in tests).
    public init(user: String = SRP.pairSetupUser, password: String, salt: [UInt8], serverPublicKey: [UInt8],
                privateKey: [UInt8] = SecureRandom.bytes(32)) throws(CryptoError) {
        guard (1...SRP.length).contains(serverPublicKey.count) else { throw CryptoError(description: "SRP: B must be 1 to 384 bytes") }
        let group = try SRPGroup.hap()
        let context = try BigNumberContext()
        let b = try BigNumber(bytes: serverPublicKey)
        guard try !b.isZero(modulo: group.N, context.pointer) else { throw CryptoError(description: "SRP: B is zero modulo N") }
        let bBytes = b.bytesMinimal()
        let a = try BigNumber(bytes: privateKey)
        let aBytes = try group.g.modExp(a, group.N, context.pointer).bytesMinimal()
        let u = try BigNumber(bytes: SHA512.hash(group.padded(aBytes), group.padded(bBytes)))
        guard try !u.isZero(modulo: group.N, context.pointer) else { throw CryptoError(description: "SRP: u is zero") }
        let x = try BigNumber(bytes: SHA512.hash(salt, SHA512.hash(Array("\(user):\(password)".utf8))))
        // S = (B − k·g^x)^(a + u·x) mod N; the exponent is not reduced.
        let kgx = try group.k.modMul(group.g.modExp(x, group.N, context.pointer), group.N, context.pointer)
        let base = try b.modSub(kgx, group.N, context.pointer)
        let exponent = try a.add(u.multiply(x, context.pointer))
        let s = try base.modExp(exponent, group.N, context.pointer)
        sessionKey = SHA512.hash(s.bytesMinimal())
        publicKey = aBytes
        proof = group.clientProof(user: user, salt: salt, clientPublicKey: aBytes, serverPublicKey: bBytes, sessionKey: sessionKey)
    }

    /// True when M4's proof is H(A ‖ M1 ‖ K).
    public func isValid(serverProof: [UInt8]) -> Bool {
        constantTimeEqual(SHA512.hash(publicKey, proof, sessionKey), serverProof)
    }
}

/// Equal byte arrays, compared in time that does not depend on where they differ.
func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
    guard lhs.count == rhs.count else { return false }
    return CRYPTO_memcmp(lhs, rhs, lhs.count) == 0
}

/// N, g and k (immutable once made).
final class SRPGroup {
    let N: BigNumber
    let g: BigNumber
    let k: BigNumber
    private let hashOfGroup: [UInt8]

    static func hap() throws(CryptoError) -> SRPGroup { try SRPGroup() }

    private init() throws(CryptoError) {
        N = try BigNumber(hex: SRP.primeHex)
        g = try BigNumber(word: 5)
        let nBytes = N.bytesMinimal(), gBytes = g.bytesMinimal()
        k = try BigNumber(bytes: SHA512.hash(nBytes, [UInt8](repeating: 0, count: SRP.length - 1) + gBytes))
        hashOfGroup = zip(SHA512.hash(nBytes), SHA512.hash(gBytes)).map { $0 ^ $1 }
    }

    /// Left-padded with zeros to the modulus length.
    func padded(_ bytes: [UInt8]) -> [UInt8] { [UInt8](repeating: 0, count: max(0, SRP.length - bytes.count)) + bytes }

    /// M1 = H(H(N) xor H(g) ‖ H(I) ‖ salt ‖ A ‖ B ‖ K).
    func clientProof(user: String, salt: [UInt8], clientPublicKey: [UInt8], serverPublicKey: [UInt8], sessionKey: [UInt8]) -> [UInt8] {
        SHA512.hash(hashOfGroup, SHA512.hash(Array(user.utf8)), salt, clientPublicKey, serverPublicKey, sessionKey)
    }
}

/// Scratch space for one computation (BN_CTX is not shared between threads).
final class BigNumberContext {
    let pointer: OpaquePointer

    init() throws(CryptoError) {
        guard let pointer = BN_CTX_new() else { throw CryptoError.openSSL("BN_CTX_new") }
        self.pointer = pointer
    }

    deinit { BN_CTX_free(pointer) }
}

/// An owned OpenSSL BIGNUM.
final class BigNumber {
    let pointer: OpaquePointer

    private init(taking pointer: OpaquePointer?) throws(CryptoError) {
        guard let pointer else { throw CryptoError.openSSL("BIGNUM") }
        self.pointer = pointer
    }

    convenience init(bytes: [UInt8]) throws(CryptoError) { try self.init(taking: BN_bin2bn(bytes, Int32(bytes.count), nil)) }

    convenience init(word: UInt) throws(CryptoError) {
        try self.init(taking: BN_new())
        guard BN_set_word(pointer, word) == 1 else { throw CryptoError.openSSL("BN_set_word") }
    }

    convenience init(hex: String) throws(CryptoError) {
        var result: OpaquePointer?
        guard BN_hex2bn(&result, hex) > 0 else { throw CryptoError.openSSL("BN_hex2bn") }
        try self.init(taking: result)
    }

    deinit { BN_clear_free(pointer) }

    /// Minimal big-endian bytes (at least one).
    func bytesMinimal() -> [UInt8] {
        let count = max(1, (Int(BN_num_bits(pointer)) + 7) / 8)
        var out = [UInt8](repeating: 0, count: count)
        _ = BN_bn2binpad(pointer, &out, Int32(count))
        return out
    }

    func modExp(_ exponent: BigNumber, _ modulus: BigNumber, _ context: OpaquePointer) throws(CryptoError) -> BigNumber {
        let result = try BigNumber(taking: BN_new())
        // Exponents here are secrets (b, a + u·x): the constant-time variant.
        guard BN_mod_exp_mont_consttime(result.pointer, pointer, exponent.pointer, modulus.pointer, context, nil) == 1 else {
            throw CryptoError.openSSL("BN_mod_exp")
        }
        return result
    }

    func modMul(_ other: BigNumber, _ modulus: BigNumber, _ context: OpaquePointer) throws(CryptoError) -> BigNumber {
        let result = try BigNumber(taking: BN_new())
        guard BN_mod_mul(result.pointer, pointer, other.pointer, modulus.pointer, context) == 1 else { throw CryptoError.openSSL("BN_mod_mul") }
        return result
    }

    func modAdd(_ other: BigNumber, _ modulus: BigNumber, _ context: OpaquePointer) throws(CryptoError) -> BigNumber {
        let result = try BigNumber(taking: BN_new())
        guard BN_mod_add(result.pointer, pointer, other.pointer, modulus.pointer, context) == 1 else { throw CryptoError.openSSL("BN_mod_add") }
        return result
    }

    func modSub(_ other: BigNumber, _ modulus: BigNumber, _ context: OpaquePointer) throws(CryptoError) -> BigNumber {
        let result = try BigNumber(taking: BN_new())
        guard BN_mod_sub(result.pointer, pointer, other.pointer, modulus.pointer, context) == 1 else { throw CryptoError.openSSL("BN_mod_sub") }
        return result
    }

    func multiply(_ other: BigNumber, _ context: OpaquePointer) throws(CryptoError) -> BigNumber {
        let result = try BigNumber(taking: BN_new())
        guard BN_mul(result.pointer, pointer, other.pointer, context) == 1 else { throw CryptoError.openSSL("BN_mul") }
        return result
    }

    func add(_ other: BigNumber) throws(CryptoError) -> BigNumber {
        let result = try BigNumber(taking: BN_new())
        guard BN_add(result.pointer, pointer, other.pointer) == 1 else { throw CryptoError.openSSL("BN_add") }
        return result
    }

    func isZero(modulo modulus: BigNumber, _ context: OpaquePointer) throws(CryptoError) -> Bool {
        let result = try BigNumber(taking: BN_new())
        guard BN_nnmod(result.pointer, pointer, modulus.pointer, context) == 1 else { throw CryptoError.openSSL("BN_nnmod") }
        return BN_is_zero(result.pointer) == 1
    }
}
