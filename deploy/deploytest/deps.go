package deploytest

import (
	_ "github.com/compose-spec/compose-go/v2/loader"
	_ "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	_ "helm.sh/helm/v3/pkg/action"
	_ "k8s.io/client-go/kubernetes/scheme"
	_ "sigs.k8s.io/yaml"
)
