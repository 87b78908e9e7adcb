#!/usr/bin/env bash
# make test-cluster: charts/eventreg installed on a real Kubernetes cluster and
# checked from outside it by e2e/cluster_test.go (TestCluster). What it proves,
# the steps and the timings: docs/deployment.md, "Tried on a real cluster";
# decision 0089.
#
# The cluster is yours and is named the usual ways; use a throwaway one (kind,
# k3d, minikube): the script installs cluster-wide pieces (the Gateway API CRDs,
# Traefik, kube-router's policy controller) and leaves them for the next run.
#
#   KUBECONFIG               the cluster (required)
#   EVENTREG_LOAD_IMAGE      the command that copies local Docker images into it,
#                            called with IMAGE:TAG arguments (required), e.g.
#                            "kind load docker-image" or "k3d image import -c NAME"
#
# Optional:
#   EVENTREG_IMAGE_TAG       tag of the service images it builds (default: cluster);
#                            the upgrade goes to "$EVENTREG_IMAGE_TAG-next"
#   GO_IMAGE, RUNTIME_IMAGE  base images for `make images` (empty: the Dockerfile's)
#   EVENTREG_BASE_IMAGE      base of the Traefik image (default gcr.io/distroless/static-debian12:nonroot)
#   EVENTREG_DEBIAN_IMAGE    base of the kube-router image, with apt (default debian:bookworm-slim):
#                            its iptables must use the nodes' backend (nf_tables on current distributions)
#   EVENTREG_NETWORK_POLICY  kube-router (default): run kube-router's NetworkPolicy controller
#                            (firewall only) as a DaemonSet; "cluster": the cluster's CNI enforces
#                            NetworkPolicy already (Calico, Cilium, ...)
#   EVENTREG_NODE_ADDR       an address of a node this machine reaches (default: the first
#                            node's InternalIP; kind's node addresses are reachable from a Linux host)
#   EVENTREG_INGRESS_PORT, EVENTREG_GATEWAY_PORT
#                            NodePorts of Traefik's websecure (Ingress) and Gateway entrypoints
#                            (default 30443, 30080)
#   EVENTREG_KEEP=1          leave the release installed at the end
#   EVENTREG_CLUSTER_CACHE   build area (default ~/.cache/eventreg-cluster)
#
# Images pulled by the chart and by this script's infrastructure are taken from the local
# Docker engine when present there, else pulled by `docker pull`: postgres:17.6-alpine,
# redis:7.4.6-alpine, busybox:1.37.0, and the two bases above. A machine without a registry
# tags local stand-ins under those names first (decision 0089).
# shellcheck disable=SC2317 # the step functions are called through timed
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
started=$SECONDS
log() { printf '[test-cluster %4ds] %s\n' "$((SECONDS - started))" "$*"; }
die() { printf 'test-cluster: %s\n' "$*" >&2; exit 1; }
timed() { local what=$1 t0=$SECONDS; shift; log "$what"; "$@"; log "$what: $((SECONDS - t0)) s"; }

TRAEFIK_VERSION=v3.6.12          # github.com/traefik/traefik/v3, from the Go module proxy
GATEWAY_API_VERSION=v1.4.0       # sigs.k8s.io/gateway-api: the CRDs Traefik v3.6 implements (its go.mod)
KUBE_ROUTER_VERSION=v2.1.0       # github.com/cloudnativelabs/kube-router/v2
TAG=${EVENTREG_IMAGE_TAG:-cluster}
NEXT_TAG=$TAG-next
CACHE=${EVENTREG_CLUSTER_CACHE:-$HOME/.cache/eventreg-cluster}
BASE_IMAGE=${EVENTREG_BASE_IMAGE:-gcr.io/distroless/static-debian12:nonroot}
DEBIAN_IMAGE=${EVENTREG_DEBIAN_IMAGE:-debian:bookworm-slim}
POLICY=${EVENTREG_NETWORK_POLICY:-kube-router}
INGRESS_PORT=${EVENTREG_INGRESS_PORT:-30443}
GATEWAY_PORT=${EVENTREG_GATEWAY_PORT:-30080}
HOST=eventreg.localtest.me       # the route's host name; the test resolves it to the node itself
NS=eventreg-test                 # the release's namespace (made afresh each run)
RELEASE=eventreg
INFRA_NS=eventreg-infra          # Traefik, its Gateway, and kube-router's DaemonSet
TRAEFIK_IMAGE=eventreg-test/traefik:$TRAEFIK_VERSION
KUBE_ROUTER_IMAGE=eventreg-test/kube-router:$KUBE_ROUTER_VERSION
THIRD_PARTY=(postgres:17.6-alpine redis:7.4.6-alpine busybox:1.37.0)
SERVICES=(auth users volunteers registrations dealers)

# ---------------------------------------------------------------- preconditions
[ -n "${KUBECONFIG:-}" ] || die "KUBECONFIG must name the cluster to install into (a throwaway one: kind, k3d, ...)"
[ -n "${EVENTREG_LOAD_IMAGE:-}" ] || die 'EVENTREG_LOAD_IMAGE must name the command that loads local images into the cluster, e.g. EVENTREG_LOAD_IMAGE="kind load docker-image"'
for tool in kubectl helm docker go openssl; do
  command -v "$tool" >/dev/null || die "$tool is needed on PATH"
done
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || die "headless Chromium is needed for the browser flow (apt-get install chromium, or CHROMIUM=path)"
export KUBECONFIG
kubectl version >/dev/null || die "the cluster named by KUBECONFIG does not answer"
mkdir -p "$CACHE/bin" "$CACHE/src" "$CACHE/images"

# A local image, or pulled; fails with the decision's hint otherwise.
have_image() {
  docker image inspect "$1" >/dev/null 2>&1 && return
  docker pull -q "$1" >/dev/null 2>&1 && return
  die "image $1 is neither local nor pullable; without a registry, tag a local stand-in under that name (docs/decisions/0089-cluster-test.md)"
}

# A module from the Go proxy, copied to $CACHE/src/NAME (writable; the module cache is read-only).
module_copy() { # NAME MODULE@VERSION
  local dir
  dir=$(GOFLAGS=-mod=mod go mod download -json "$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir" ] || die "go mod download $2 failed"
  rm -rf "$CACHE/src/$1" && cp -r "$dir" "$CACHE/src/$1" && chmod -R u+w "$CACHE/src/$1"
}

# ---------------------------------------------------------------- images
service_images() {
  make --no-print-directory images IMAGE_TAG="$TAG" GO_IMAGE="${GO_IMAGE:-}" RUNTIME_IMAGE="${RUNTIME_IMAGE:-}"
}

# The release the upgrade goes to: these sources plus one expand migration of
# volunteers (a nullable column nobody reads), so the upgrade's migration Job has
# real work to do while the old pods serve, and a rollback lands on a schema ahead
# of the older code.
next_images() {
  local src=$CACHE/next-src
  mkdir -p "$src"
  tar -C "$ROOT" -cf - Makefile libs services deploy/docker | (rm -rf "${src:?}"/* && tar -C "$src" -xf -)
  local mig=$src/services/volunteers/migrations
  local n; n=$(find "$mig" -name '*.up.sql' | wc -l)
  local next; next=$(printf '%04d' $((10#$n + 1)))
  printf -- '-- cluster test: an expand step of release "next" (deploy/scripts/test-cluster.sh)\nALTER TABLE departments ADD COLUMN cluster_test_note text;\n' >"$mig/${next}_cluster_test_note.up.sql"
  printf 'ALTER TABLE departments DROP COLUMN cluster_test_note;\n' >"$mig/${next}_cluster_test_note.down.sql"
  echo "$((10#$n + 1))" >"$CACHE/next-volunteers-schema"
  make --no-print-directory -C "$src" images IMAGE_TAG="$NEXT_TAG" VERSION="$NEXT_TAG" GO_IMAGE="${GO_IMAGE:-}" RUNTIME_IMAGE="${RUNTIME_IMAGE:-}"
}

# Traefik from its Go module (cmd/traefik as the main module: its go.mod has replace
# directives, so `go install` refuses). The web UI is an npm build, absent from the
# module: webui/static keeps only its placeholder, so the dashboard is empty.
traefik_image() {
  docker image inspect "$TRAEFIK_IMAGE" >/dev/null 2>&1 && { log "$TRAEFIK_IMAGE present"; return; }
  have_image "$BASE_IMAGE"
  if [ ! -x "$CACHE/bin/traefik-$TRAEFIK_VERSION" ]; then
    module_copy traefik "github.com/traefik/traefik/v3@$TRAEFIK_VERSION"
    mkdir -p "$CACHE/src/traefik/webui/static"
    (cd "$CACHE/src/traefik" && CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$TRAEFIK_VERSION" \
      -o "$CACHE/bin/traefik-$TRAEFIK_VERSION" ./cmd/traefik)
  fi
  local ctx=$CACHE/images/traefik
  rm -rf "$ctx" && mkdir -p "$ctx" && cp "$CACHE/bin/traefik-$TRAEFIK_VERSION" "$ctx/traefik"
  printf 'FROM %s\nCOPY traefik /usr/local/bin/traefik\nUSER 65532:65532\nENTRYPOINT ["/usr/local/bin/traefik"]\n' "$BASE_IMAGE" >"$ctx/Dockerfile"
  docker build -q -t "$TRAEFIK_IMAGE" "$ctx" >/dev/null
}

# kube-router from its Go module, on Debian with iptables and ipset (what its own
# Alpine image adds), run with the firewall (NetworkPolicy) controller only.
kube_router_image() {
  docker image inspect "$KUBE_ROUTER_IMAGE" >/dev/null 2>&1 && { log "$KUBE_ROUTER_IMAGE present"; return; }
  have_image "$DEBIAN_IMAGE"
  if [ ! -x "$CACHE/bin/kube-router-$KUBE_ROUTER_VERSION" ]; then
    module_copy kube-router "github.com/cloudnativelabs/kube-router/v2@$KUBE_ROUTER_VERSION"
    (cd "$CACHE/src/kube-router" && CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$KUBE_ROUTER_VERSION" \
      -o "$CACHE/bin/kube-router-$KUBE_ROUTER_VERSION" ./cmd/kube-router)
  fi
  local ctx=$CACHE/images/kube-router
  rm -rf "$ctx" && mkdir -p "$ctx" && cp "$CACHE/bin/kube-router-$KUBE_ROUTER_VERSION" "$ctx/kube-router"
  cat >"$ctx/Dockerfile" <<EOF
FROM $DEBIAN_IMAGE
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends iptables ipset >/dev/null && rm -rf /var/lib/apt/lists/*
COPY kube-router /usr/local/bin/kube-router
ENTRYPOINT ["/usr/local/bin/kube-router"]
EOF
  docker build -q -t "$KUBE_ROUTER_IMAGE" "$ctx" >/dev/null
}

load_images() {
  local imgs=() s
  for s in "${SERVICES[@]}"; do imgs+=("ghcr.io/eventreg/eventreg-$s:$TAG" "ghcr.io/eventreg/eventreg-$s:$NEXT_TAG"); done
  for s in "${THIRD_PARTY[@]}"; do have_image "$s"; imgs+=("$s"); done
  imgs+=("$TRAEFIK_IMAGE")
  [ "$POLICY" = kube-router ] && imgs+=("$KUBE_ROUTER_IMAGE")
  # shellcheck disable=SC2086 # the command may carry its own arguments
  $EVENTREG_LOAD_IMAGE "${imgs[@]}"
}

# ---------------------------------------------------------------- cluster infrastructure
gateway_api_crds() {
  local dir
  dir=$(GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir/config/crd/standard" ] || die "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION has no config/crd/standard"
  kubectl apply --server-side --force-conflicts -f "$dir/config/crd/standard/" >/dev/null
  kubectl wait --for condition=Established --timeout 60s crd/gateways.gateway.networking.k8s.io crd/httproutes.gateway.networking.k8s.io >/dev/null
}

kube_router() {
  kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: kube-router, namespace: $INFRA_NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: eventreg-test-kube-router}
rules:
  - apiGroups: [""]
    resources: [namespaces, pods, services, nodes, endpoints]
    verbs: [get, list, watch]
  - apiGroups: [networking.k8s.io]
    resources: [networkpolicies]
    verbs: [get, list, watch]
  - apiGroups: [discovery.k8s.io]
    resources: [endpointslices]
    verbs: [get, list, watch]
  - apiGroups: [""]
    resources: [events]
    verbs: [create, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: eventreg-test-kube-router}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: eventreg-test-kube-router}
subjects: [{kind: ServiceAccount, name: kube-router, namespace: $INFRA_NS}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: kube-router, namespace: $INFRA_NS, labels: {app: kube-router}}
spec:
  selector: {matchLabels: {app: kube-router}}
  template:
    metadata: {labels: {app: kube-router}}
    spec:
      serviceAccountName: kube-router
      hostNetwork: true
      priorityClassName: system-node-critical
      tolerations: [{operator: Exists}]
      containers:
        - name: kube-router
          image: $KUBE_ROUTER_IMAGE
          imagePullPolicy: IfNotPresent
          args: [--run-firewall=true, --run-router=false, --run-service-proxy=false, --health-port=20244]
          env:
            - name: NODE_NAME
              valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
          securityContext: {privileged: true}
          livenessProbe:
            httpGet: {path: /healthz, port: 20244}
            initialDelaySeconds: 10
            periodSeconds: 5
          volumeMounts:
            - {name: lib-modules, mountPath: /lib/modules, readOnly: true}
            - {name: xtables-lock, mountPath: /run/xtables.lock}
      volumes:
        - name: lib-modules
          hostPath: {path: /lib/modules}
        - name: xtables-lock
          hostPath: {path: /run/xtables.lock, type: FileOrCreate}
EOF
  kubectl -n "$INFRA_NS" rollout status daemonset/kube-router --timeout 120s >/dev/null
}

# Traefik serves the chart's Ingress on its websecure entrypoint (8443) and the
# chart's HTTPRoute through a Gateway listener on the gateway entrypoint (8000):
# two entrypoints, so each request is served by the route under test.
traefik() {
  kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: traefik, namespace: $INFRA_NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: eventreg-test-traefik}
rules:
  - apiGroups: [""]
    resources: [namespaces]
    verbs: [list, watch]
  - apiGroups: [""]
    resources: [services, secrets, configmaps, nodes]
    verbs: [get, list, watch]
  - apiGroups: [discovery.k8s.io]
    resources: [endpointslices]
    verbs: [list, watch]
  - apiGroups: [networking.k8s.io]
    resources: [ingresses, ingressclasses]
    verbs: [get, list, watch]
  - apiGroups: [networking.k8s.io]
    resources: [ingresses/status]
    verbs: [update]
  - apiGroups: [gateway.networking.k8s.io]
    resources: [gatewayclasses, gateways, httproutes, grpcroutes, tcproutes, tlsroutes, referencegrants, backendtlspolicies]
    verbs: [get, list, watch]
  - apiGroups: [gateway.networking.k8s.io]
    resources: [gatewayclasses/status, gateways/status, httproutes/status, grpcroutes/status, tcproutes/status, tlsroutes/status, referencegrants/status, backendtlspolicies/status]
    verbs: [update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: eventreg-test-traefik}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: eventreg-test-traefik}
subjects: [{kind: ServiceAccount, name: traefik, namespace: $INFRA_NS}]
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: eventreg-test-traefik}
spec: {controller: traefik.io/ingress-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: eventreg-test-traefik}
spec: {controllerName: traefik.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: eventreg, namespace: $INFRA_NS}
spec:
  gatewayClassName: eventreg-test-traefik
  listeners:
    - name: http
      protocol: HTTP
      port: 8000
      allowedRoutes: {namespaces: {from: All}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: traefik, namespace: $INFRA_NS, labels: {app: traefik}}
spec:
  replicas: 1
  selector: {matchLabels: {app: traefik}}
  template:
    metadata: {labels: {app: traefik}}
    spec:
      serviceAccountName: traefik
      containers:
        - name: traefik
          image: $TRAEFIK_IMAGE
          imagePullPolicy: IfNotPresent
          args:
            - --entrypoints.websecure.address=:8443
            - --entrypoints.websecure.http.tls=true
            - --entrypoints.gateway.address=:8000
            - --entrypoints.traefik.address=:9000
            - --ping=true
            - --providers.kubernetesingress=true
            - --providers.kubernetesingress.ingressclass=eventreg-test-traefik
            - --providers.kubernetesgateway=true
            - --log.level=INFO
            - --log.nocolor=true
          ports:
            - {name: websecure, containerPort: 8443}
            - {name: gateway, containerPort: 8000}
            - {name: ping, containerPort: 9000}
          readinessProbe:
            httpGet: {path: /ping, port: 9000}
            periodSeconds: 2
          securityContext:
            runAsNonRoot: true
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: {drop: [ALL]}
---
apiVersion: v1
kind: Service
metadata: {name: traefik, namespace: $INFRA_NS}
spec:
  type: NodePort
  externalTrafficPolicy: Local
  selector: {app: traefik}
  ports:
    - {name: websecure, port: 443, targetPort: websecure, nodePort: $INGRESS_PORT}
    - {name: gateway, port: 80, targetPort: gateway, nodePort: $GATEWAY_PORT}
EOF
  kubectl -n "$INFRA_NS" rollout status deployment/traefik --timeout 120s >/dev/null
}

# The release's namespace, afresh: the Secret the chart refers to and the route's certificate.
release_namespace() {
  if kubectl get namespace "$NS" >/dev/null 2>&1; then
    helm uninstall "$RELEASE" -n "$NS" --wait >/dev/null 2>&1 || true
    kubectl delete namespace "$NS" --wait --timeout 180s >/dev/null
  fi
  kubectl create namespace "$NS" >/dev/null
  kubectl -n "$NS" create secret generic eventreg-secrets \
    --from-literal=key-encryption-key="$(openssl rand -base64 32)" \
    --from-literal=client-secret-key="$(openssl rand -hex 32)" \
    --from-literal=cursor-key="$(openssl rand -hex 32)" \
    --from-literal=internal-auth-key="$(openssl rand -hex 32)" \
    --from-literal=postgres-password="$(openssl rand -hex 24)" >/dev/null
  local tls=$CACHE/tls
  mkdir -p "$tls"
  if [ ! -s "$tls/tls.crt" ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
      -subj "/CN=$HOST" -addext "subjectAltName=DNS:$HOST" -keyout "$tls/tls.key" -out "$tls/tls.crt" 2>/dev/null
  fi
  kubectl -n "$NS" create secret tls eventreg-tls --cert="$tls/tls.crt" --key="$tls/tls.key" >/dev/null
}

node_addr() {
  if [ -n "${EVENTREG_NODE_ADDR:-}" ]; then echo "$EVENTREG_NODE_ADDR"; return; fi
  kubectl get nodes -o jsonpath='{.items[0].status.addresses[?(@.type=="InternalIP")].address}'
}

# ---------------------------------------------------------------- run
timed "service images ($TAG)" service_images
timed "service images of the next release ($NEXT_TAG: + a volunteers expand migration)" next_images
timed "Traefik $TRAEFIK_VERSION image" traefik_image
[ "$POLICY" = kube-router ] && timed "kube-router $KUBE_ROUTER_VERSION image" kube_router_image
timed "loading the images into the cluster ($EVENTREG_LOAD_IMAGE)" load_images
kubectl create namespace "$INFRA_NS" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
timed "Gateway API $GATEWAY_API_VERSION CRDs (standard channel)" gateway_api_crds
[ "$POLICY" = kube-router ] && timed "kube-router (NetworkPolicy controller only)" kube_router
timed "Traefik (Ingress and Gateway API)" traefik
timed "namespace $NS, its Secret and certificate" release_namespace

ADDR=$(node_addr)
[ -n "$ADDR" ] || die "no node address: set EVENTREG_NODE_ADDR"
log "routes: Ingress https://$HOST:$INGRESS_PORT, HTTPRoute http://$HOST:$GATEWAY_PORT (the name resolved to $ADDR)"

out=$CACHE/test-cluster.log
set +e
(cd e2e && EVENTREG_TEST_CLUSTER=1 \
  EVENTREG_CHART="$ROOT/charts/eventreg" EVENTREG_NAMESPACE="$NS" EVENTREG_RELEASE="$RELEASE" \
  EVENTREG_IMAGE_TAG="$TAG" EVENTREG_IMAGE_TAG_NEXT="$NEXT_TAG" EVENTREG_NEXT_SCHEMA="$(cat "$CACHE/next-volunteers-schema")" \
  EVENTREG_HOST="$HOST" EVENTREG_NODE_ADDR="$ADDR" EVENTREG_CA="$CACHE/tls/tls.crt" \
  EVENTREG_INGRESS_PORT="$INGRESS_PORT" EVENTREG_GATEWAY_PORT="$GATEWAY_PORT" \
  EVENTREG_INFRA_NAMESPACE="$INFRA_NS" EVENTREG_GATEWAY=eventreg EVENTREG_INGRESS_CLASS=eventreg-test-traefik \
  EVENTREG_FIXTURE="$ROOT/deploy/fixtures/demo.json" \
  go test -count=1 -v -timeout 40m -run '^TestCluster$' . 2>&1) | tee "$out"
rc=${PIPESTATUS[0]}
set -e

if [ "${EVENTREG_KEEP:-}" != 1 ]; then
  helm uninstall "$RELEASE" -n "$NS" --wait >/dev/null 2>&1 || true
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
fi
log "done in $((SECONDS - started)) s (log: $out)"
passed=$(grep -cE '^    --- PASS: TestCluster/[^/ ]+ ' "$out" || true)
failed=$(grep -cE '^    --- FAIL: TestCluster/[^/ ]+ ' "$out" || true)
if [ "$rc" != 0 ] && [ "$failed" = 0 ]; then failed=1; fi
echo "cluster: $passed passed, $failed failed"
exit "$rc"
