// A webhook receiver written from the real API's documentation, as a Node
// app would: the key is the PEM of GET /api/webhooks/key (read with jose's
// importSPKI); each request's token is checked for aud (the webhook's URL),
// exp, iss, sub ("webhook"), then its signature with that key, then int (the
// base64 SHA-256 of the data property). On a signature failure the key is
// fetched again once (keys rotate). Usage: node receiver.mjs KEY_URL ISSUER.
// It prints {"listening": PORT}, then one JSON line per request.
import { createServer } from 'node:http';
import { createHash } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, importSPKI, jwtVerify } from 'jose';

const [keyURL, issuer] = process.argv.slice(2);
let pem = null;

async function fetchKey() {
  const res = await fetch(keyURL);
  if (!res.ok) throw new Error(`key: HTTP ${res.status}`);
  pem = await res.text();
}

async function verify(url, token, body) {
  const claims = decodeJwt(token);
  const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!aud.includes(url)) return 'aud';
  if (typeof claims.exp !== 'number' || claims.exp * 1000 <= Date.now()) return 'exp';
  if (claims.iss !== issuer) return 'iss';
  if (claims.sub !== 'webhook') return 'sub';
  const { alg } = decodeProtectedHeader(token);
  for (let attempt = 0; ; attempt++) {
    if (pem === null) await fetchKey();
    try {
      await jwtVerify(token, await importSPKI(pem, alg), { issuer, audience: url, subject: 'webhook' });
      break;
    } catch (err) {
      if (attempt > 0) return 'signature';
      pem = null; // fetch it again: the key may have rotated
    }
  }
  const data = JSON.parse(body).data;
  const int = createHash('sha256').update(JSON.stringify(data)).digest('base64');
  if (claims.int !== int) return 'int';
  return null;
}

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const url = `http://${req.headers.host}${req.url}`;
    const token = (req.headers.authorization || '').replace(/^Bearer /, '');
    let problem;
    try {
      problem = await verify(url, token, body);
    } catch (err) {
      problem = `error: ${err.message}`;
    }
    const line = { ok: problem === null, problem, userAgent: req.headers['user-agent'] || '' };
    if (problem === null) {
      const parsed = JSON.parse(body);
      Object.assign(line, { jti: decodeJwt(token).jti, event: parsed.event, data: parsed.data, token, body });
    }
    process.stdout.write(JSON.stringify(line) + '\n');
    res.writeHead(problem === null ? 204 : 401).end(problem === null ? undefined : problem);
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ listening: server.address().port }) + '\n');
});
