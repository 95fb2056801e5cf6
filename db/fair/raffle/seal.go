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

// Seal seals a secret of one item (a raffle's or a waiting room's seed)
// under a key derived from the server's key for that purpose
// (HMAC-SHA256(key, purpose + "-seal")), with purpose and the item's ID
// bound in as additional data, so one item's sealed secret cannot be moved
// to another: hex(nonce || ciphertext).
func Seal(key []byte, purpose string, id int64, secret string) (string, error) {
	a, err := sealAEAD(key, purpose)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, a.NonceSize())
	rand.Read(nonce)
	return hex.EncodeToString(a.Seal(nonce, nonce, []byte(secret), sealData(purpose, id))), nil
}

// Open opens what Seal sealed for the same purpose and item.
func Open(key []byte, purpose string, id int64, sealed string) (string, error) {
	a, err := sealAEAD(key, purpose)
	if err != nil {
		return "", err
	}
	b, err := hex.DecodeString(sealed)
	if err != nil || len(b) < a.NonceSize() {
		return "", fmt.Errorf("%s %d: the sealed seed is malformed", purpose, id)
	}
	plain, err := a.Open(nil, b[:a.NonceSize()], b[a.NonceSize():], sealData(purpose, id))
	if err != nil {
		return "", fmt.Errorf("%s %d: the sealed seed does not open with this server's secret (was SESSION_SECRET changed?): %w", purpose, id, err)
	}
	return string(plain), nil
}

func sealAEAD(key []byte, purpose string) (cipher.AEAD, error) {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(purpose + "-seal"))
	b, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

func sealData(purpose string, id int64) []byte {
	return []byte(purpose + ":" + strconv.FormatInt(id, 10))
}

// sealSeed seals the seed of the raffle of goods.
func (s *Raffles) sealSeed(goodsID int64, seed string) (string, error) {
	return Seal(s.Key(), "raffle", goodsID, seed)
}

// openSeed opens a sealed seed of the raffle of goods.
func (s *Raffles) openSeed(goodsID int64, sealed string) (string, error) {
	return Open(s.Key(), "raffle", goodsID, sealed)
}
