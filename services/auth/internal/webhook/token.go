package webhook

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Signer signs webhook tokens (signing.Manager).
type Signer interface {
	SignWebhook(payload []byte) (string, error)
}

// Lifetimes of a delivery's JWT, by format (decision 0098).
const (
	tokenTTL       = 5 * time.Minute
	concatTokenTTL = 120 * time.Second
)

// Subject is the sub claim of every delivery token, as the real API's.
const Subject = "webhook"

// User agents of deliveries, by format. The ConCat one starts with the real
// API's own product token, so a receiver that looks for it finds it, and
// names eventreg after it (decision 0098).
const (
	UserAgent       = "eventreg-webhooks"
	UserAgentConCat = "ConCat/AxiosHTTPClient " + UserAgent
)

func userAgent(f Format) string {
	if f == FormatConCat {
		return UserAgentConCat
	}
	return UserAgent
}

// tokenClaims are the claims of a delivery's JWT (typ webhook+jwt).
type tokenClaims struct {
	Issuer string `json:"iss"`
	// Subject is always "webhook".
	Subject string `json:"sub"`
	// Audience is the app's client id (FormatEventreg) or the
	// subscription's URL (FormatConCat).
	Audience string `json:"aud"`
	IssuedAt int64  `json:"iat"`
	Expiry   int64  `json:"exp"`
	// ID is the delivery id, the same on every attempt: the receiver's
	// dedupe key.
	ID      string `json:"jti"`
	Event   string `json:"event"`
	EventID string `json:"event_id"`
	// BodySHA256 is base64url (no padding) of SHA-256 of the exact body.
	BodySHA256 string `json:"body_sha256"`
	// Integrity is standard base64 (padded) of SHA-256 of the body's data
	// member exactly as sent: the real API's int claim.
	Integrity string `json:"int"`
}

// bodyHash is the body_sha256 claim of body.
func bodyHash(body []byte) string {
	sum := sha256.Sum256(body)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// dataHash is the int claim of body ({"event":TYPE,"data":DATA}): the
// SHA-256 of DATA's bytes as they are in body, in standard base64.
func dataHash(body []byte) (string, error) {
	var b struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &b); err != nil || len(b.Data) == 0 {
		return "", fmt.Errorf("the delivery body has no data member")
	}
	sum := sha256.Sum256(b.Data)
	return base64.StdEncoding.EncodeToString(sum[:]), nil
}

// claimsOf are the claims of the token of one attempt of c at now.
func claimsOf(c Claim, issuer string, now time.Time) (tokenClaims, error) {
	integrity, err := dataHash(c.Body)
	if err != nil {
		return tokenClaims{}, err
	}
	aud, ttl := strconv.FormatInt(c.ClientID, 10), tokenTTL
	if c.Format == FormatConCat {
		aud, ttl = c.URL, concatTokenTTL
	}
	return tokenClaims{Issuer: issuer, Subject: Subject, Audience: aud, IssuedAt: now.Unix(), Expiry: now.Add(ttl).Unix(),
		ID: c.DeliveryID, Event: c.EventType, EventID: c.EventID, BodySHA256: bodyHash(c.Body), Integrity: integrity}, nil
}

// token signs the delivery's JWT; every attempt gets a new one.
func (s *sender) token(c Claim) (string, error) {
	claims, err := claimsOf(c, s.issuer, time.Now())
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("encoding webhook claims: %w", err)
	}
	return s.signer.SignWebhook(payload)
}
