// Package deploytest checks the deployment files without a Docker engine or a
// cluster: the gateway route table against the contract's endpoint list, the
// Helm chart rendered and decoded strictly into Kubernetes API types, the docker
// compose file loaded with the compose-spec loader, and the Dockerfile's shape.
//
// Run: cd deploy/deploytest && go test ./...   (-update rewrites golden files)
package deploytest
