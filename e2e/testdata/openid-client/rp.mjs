// A relying party written with the openid-client npm package (by others):
// discovery, the authorization URL with PKCE, nonce and state, then, given
// the URL the browser came back to on stdin, the code exchange with the ID
// token's checks (signature against the JWKS, iss, aud, exp, nonce, the
// response's iss) and UserInfo. It prints one JSON line per step.
// Usage: node rp.mjs ISSUER CLIENT_ID CLIENT_SECRET REDIRECT_URI
import * as client from 'openid-client'
import { createHash } from 'node:crypto'
import { createInterface } from 'node:readline'

const [issuer, clientId, clientSecret, redirectUri] = process.argv.slice(2)
const config = await client.discovery(new URL(issuer), clientId, clientSecret, undefined,
  { execute: [client.allowInsecureRequests] }) // the local gateway is http
client.enableNonRepudiationChecks(config) // verify ID token signatures with the JWKS

const verifier = client.randomPKCECodeVerifier()
const nonce = client.randomNonce()
const state = client.randomState()
const url = client.buildAuthorizationUrl(config, {
  redirect_uri: redirectUri, scope: 'openid profile email', nonce, state,
  code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
})
console.log(JSON.stringify({ authorizationUrl: url.href }))

const rl = createInterface({ input: process.stdin })
const callback = await new Promise((resolve) => rl.once('line', resolve))
rl.close()
const tokens = await client.authorizationCodeGrant(config, new URL(callback),
  { pkceCodeVerifier: verifier, expectedNonce: nonce, expectedState: state, idTokenExpected: true })
const claims = tokens.claims()
// at_hash (Core §3.1.3.6): the left half of the SHA-256 of the access token.
const digest = createHash('sha256').update(tokens.access_token).digest()
const atHash = digest.subarray(0, digest.length / 2).toString('base64url')
if (claims.at_hash !== atHash) throw new Error(`at_hash ${claims.at_hash}, want ${atHash}`)
const userinfo = await client.fetchUserInfo(config, tokens.access_token, claims.sub)
console.log(JSON.stringify({ claims, nonceSent: nonce, userinfo }))
