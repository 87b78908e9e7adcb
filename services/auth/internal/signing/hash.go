package signing

import "crypto"

const cryptoSHA256 = crypto.SHA256
