package signing

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// seal encrypts plaintext with AES-256-GCM under kek; the key id is the
// additional data, so a ciphertext cannot be moved to another key's row.
func seal(kek []byte, kid string, plaintext []byte) ([]byte, error) {
	gcm, err := newGCM(kek)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("reading nonce: %w", err)
	}
	return gcm.Seal(nonce, nonce, plaintext, []byte(kid)), nil
}

// open decrypts what seal produced.
func open(kek []byte, kid string, sealed []byte) ([]byte, error) {
	gcm, err := newGCM(kek)
	if err != nil {
		return nil, err
	}
	if len(sealed) < gcm.NonceSize()+gcm.Overhead() {
		return nil, errors.New("sealed key too short")
	}
	plain, err := gcm.Open(nil, sealed[:gcm.NonceSize()], sealed[gcm.NonceSize():], []byte(kid))
	if err != nil {
		return nil, errors.New("decrypting signing key failed: wrong KEY_ENCRYPTION_KEY or corrupted row")
	}
	return plain, nil
}

func newGCM(kek []byte) (cipher.AEAD, error) {
	if len(kek) != 32 {
		return nil, errors.New("key-encryption key must be 32 bytes")
	}
	block, err := aes.NewCipher(kek)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
