package raffle

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
)

// The raffle's seed is kept sealed until the draw: AES-256-GCM under a key
// derived from the server's secret (HMAC-SHA256 of PowKey, which Main
// derives from the server's secret, labelled "raffle-seal"), the goods' ID
// bound in as additional data so that one raffle's sealed seed cannot be
// moved to another. The store holds hex(nonce || ciphertext) in
// raffles.seed_sealed and an empty seed; the draw writes the seed in plain
// in the transaction that marks the raffle drawn. A copy of the store alone
// (a backup, a replica, a read-only account) therefore does not tell the
// seed before the draw.

// sealKey is the key that seals raffles' seeds.
func (s *Raffles) sealKey() []byte {
	m := hmac.New(sha256.New, s.Key())
	m.Write([]byte("raffle-seal"))
	return m.Sum(nil)
}

func (s *Raffles) sealAEAD() (cipher.AEAD, error) {
	b, err := aes.NewCipher(s.sealKey())
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

func sealData(goodsID int64) []byte { return []byte("raffle:" + strconv.FormatInt(goodsID, 10)) }

// sealSeed seals the seed of the raffle of goods.
func (s *Raffles) sealSeed(goodsID int64, seed string) (string, error) {
	a, err := s.sealAEAD()
	if err != nil {
		return "", err
	}
	nonce := make([]byte, a.NonceSize())
	rand.Read(nonce)
	return hex.EncodeToString(a.Seal(nonce, nonce, []byte(seed), sealData(goodsID))), nil
}

// openSeed opens a sealed seed of the raffle of goods.
func (s *Raffles) openSeed(goodsID int64, sealed string) (string, error) {
	a, err := s.sealAEAD()
	if err != nil {
		return "", err
	}
	b, err := hex.DecodeString(sealed)
	if err != nil || len(b) < a.NonceSize() {
		return "", fmt.Errorf("raffle %d: the sealed seed is malformed", goodsID)
	}
	seed, err := a.Open(nil, b[:a.NonceSize()], b[a.NonceSize():], sealData(goodsID))
	if err != nil {
		return "", fmt.Errorf("raffle %d: the sealed seed does not open with this server's secret (was SESSION_SECRET changed?): %w", goodsID, err)
	}
	return string(seed), nil
}
