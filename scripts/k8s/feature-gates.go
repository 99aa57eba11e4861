// feature-gates.go prints lib/config/feature-gates-list.ts: every feature gate kube-proxy at
// this module's pinned release knows, as kube-proxy registers them (cmd/kube-proxy/app/server.go
// adds component-base's metrics and logs gates to pkg/features'). Nothing here ships.
//
//	cd scripts/k8s && go run feature-gates.go > ../../lib/config/feature-gates-list.ts
package main

import (
	"fmt"
	"sort"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	metricsfeatures "k8s.io/component-base/metrics/features"
	_ "k8s.io/kubernetes/pkg/features"
)

const header = `// GENERATED from k8s.io/kubernetes v1.37.2 (scripts/k8s/go.mod's pin): every feature gate
// kube-proxy's DefaultFeatureGate knows (pkg/features, with component-base's logs and metrics
// gates kube-proxy adds in cmd/kube-proxy/app/server.go), GA and deprecated ones included (its
// --help lists neither, but it accepts both). Regenerate when the pin moves:
// cd scripts/k8s && go run feature-gates.go > ../../lib/config/feature-gates-list.ts

/** A gate's maturity at the pinned release, and the value it is locked to, if it is. */
export interface FeatureGateSpec {
  readonly stage: 'ALPHA' | 'BETA' | 'GA' | 'DEPRECATED';
  readonly lockedTo?: boolean;
}

const A = { stage: 'ALPHA' } as const;
const B = { stage: 'BETA' } as const;
const G = { stage: 'GA' } as const;
const D = { stage: 'DEPRECATED' } as const;

/** kube-proxy's known feature gates, by name. */
export const KUBE_PROXY_FEATURE_GATES: ReadonlyMap<string, FeatureGateSpec> = new Map<string, FeatureGateSpec>([
`

func main() {
	utilruntime.Must(metricsfeatures.AddFeatureGates(utilfeature.DefaultMutableFeatureGate))
	utilruntime.Must(logsapi.AddFeatureGates(utilfeature.DefaultMutableFeatureGate))
	all := utilfeature.DefaultMutableFeatureGate.GetAll()
	names := []string{}
	for k := range all {
		names = append(names, string(k))
	}
	sort.Strings(names)
	fmt.Print(header)
	for _, n := range names {
		s := all[featuregate.Feature(n)]
		stage := string(s.PreRelease)
		if stage == "" {
			stage = "GA"
		}
		if s.LockToDefault {
			fmt.Printf("  ['%s', { stage: '%s', lockedTo: %v }],\n", n, stage, s.Default)
		} else {
			fmt.Printf("  ['%s', %s],\n", n, stage[:1])
		}
	}
	fmt.Print("]);\n")
}
