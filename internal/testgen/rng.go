package testgen

import (
	"encoding/base64"
	"encoding/hex"
)

// rng is splitmix64. The generator carries its own PRNG instead of math/rand so that a
// committed sample regenerates byte for byte under any future Go release.
type rng struct{ s uint64 }

func newRNG(seed int64) rng { return rng{s: uint64(seed)*0x9e3779b97f4a7c15 + 0x2545f4914f6cdd1d} }

func (r *rng) u64() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a value in [0, n); n <= 0 gives 0.
func (r *rng) intn(n int) int {
	if n <= 0 {
		return 0
	}
	return int(r.u64() % uint64(n))
}

// between returns a value in [lo, hi].
func (r *rng) between(lo, hi int) int {
	if hi <= lo {
		return lo
	}
	return lo + r.intn(hi-lo+1)
}

func (r *rng) float() float64 { return float64(r.u64()>>11) / (1 << 53) }

func (r *rng) chance(p float64) bool { return r.float() < p }

func (r *rng) pick(list []string) string { return list[r.intn(len(list))] }

func (r *rng) bytes(n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := r.u64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func (r *rng) base62(prefix string, n int) string {
	b := make([]byte, len(prefix), len(prefix)+n)
	copy(b, prefix)
	for i := 0; i < n; i++ {
		b = append(b, base62[r.intn(len(base62))])
	}
	return string(b)
}

func (r *rng) hex(n int) string { return hex.EncodeToString(r.bytes(n)) }

// uuid returns a version-4 shaped UUID.
func (r *rng) uuid() string {
	b := r.bytes(16)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// b64 returns n random bytes in standard base64 (signatures, encrypted reasoning).
func (r *rng) b64(n int) string { return base64.StdEncoding.EncodeToString(r.bytes(n)) }
