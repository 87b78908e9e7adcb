package testkit

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	jwt "github.com/golang-jwt/jwt/v5"
)

// VerifyConCatDelivery checks a webhook delivery as the real API's
// documentation tells a receiver to, in its order: aud (the webhook's URL),
// exp, iss, sub ("webhook"), then the signature with the PEM key of GET
// /api/webhooks/key, then int (base64 of the SHA-256 of the data property
// as received). golang-jwt, a library a receiver would use, reads the PEM.
// A refusal of the key or the signature says "signature".
func VerifyConCatDelivery(token string, body, pemKey []byte, url, issuer string) error {
	var claims jwt.MapClaims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &claims); err != nil {
		return fmt.Errorf("not a JWT: %w", err)
	}
	if aud, err := claims.GetAudience(); err != nil || !slices.Contains(aud, url) {
		return fmt.Errorf("aud %v is not %s", aud, url)
	}
	if exp, err := claims.GetExpirationTime(); err != nil || exp == nil || !exp.After(time.Now()) {
		return errors.New("exp: expired")
	}
	if iss, _ := claims.GetIssuer(); iss != issuer {
		return fmt.Errorf("iss %q", iss)
	}
	if sub, _ := claims.GetSubject(); sub != "webhook" {
		return fmt.Errorf("sub %q", sub)
	}
	key, err := jwt.ParseECPublicKeyFromPEM(pemKey)
	if err != nil {
		return fmt.Errorf("signature: the key is not a PEM public key: %w", err)
	}
	if _, err := jwt.Parse(token, func(*jwt.Token) (any, error) { return key, nil }, jwt.WithValidMethods([]string{"ES256"})); err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	var b struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	sum := sha256.Sum256(b.Data)
	if claims["int"] != base64.StdEncoding.EncodeToString(sum[:]) {
		return errors.New("int does not match the data")
	}
	return nil
}
