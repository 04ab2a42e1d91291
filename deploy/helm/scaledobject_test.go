package helm

import autoscalingv2 "k8s.io/api/autoscaling/v2"

// ScaledObject is KEDA's keda.sh/v1alpha1 ScaledObject with the fields
// KEDA documents (keda.sh/docs/concepts/scaling-deployments), written
// here rather than importing KEDA's module, which brings its operator's
// whole dependency tree: a field KEDA does not have fails the strict
// decode as one Kubernetes does not have does.
type ScaledObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace,omitempty"`
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	} `json:"metadata"`
	Spec ScaledObjectSpec `json:"spec"`
}

// ScaledObjectSpec is a ScaledObject's spec.
type ScaledObjectSpec struct {
	ScaleTargetRef struct {
		APIVersion             string `json:"apiVersion,omitempty"`
		Kind                   string `json:"kind,omitempty"`
		Name                   string `json:"name"`
		EnvSourceContainerName string `json:"envSourceContainerName,omitempty"`
	} `json:"scaleTargetRef"`
	PollingInterval  *int32 `json:"pollingInterval,omitempty"`
	InitialCooldown  *int32 `json:"initialCooldownPeriod,omitempty"`
	CooldownPeriod   *int32 `json:"cooldownPeriod,omitempty"`
	IdleReplicaCount *int32 `json:"idleReplicaCount,omitempty"`
	MinReplicaCount  *int32 `json:"minReplicaCount,omitempty"`
	MaxReplicaCount  *int32 `json:"maxReplicaCount,omitempty"`
	Fallback         *struct {
		FailureThreshold int32  `json:"failureThreshold"`
		Replicas         int32  `json:"replicas"`
		Behavior         string `json:"behavior,omitempty"`
	} `json:"fallback,omitempty"`
	Advanced *struct {
		RestoreToOriginalReplicaCount bool `json:"restoreToOriginalReplicaCount,omitempty"`
		HorizontalPodAutoscalerConfig *struct {
			Name     string                                         `json:"name,omitempty"`
			Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
		} `json:"horizontalPodAutoscalerConfig,omitempty"`
	} `json:"advanced,omitempty"`
	Triggers []ScaleTrigger `json:"triggers"`
}

// ScaleTrigger is one trigger of a ScaledObject.
type ScaleTrigger struct {
	Type              string            `json:"type"`
	Name              string            `json:"name,omitempty"`
	UseCachedMetrics  bool              `json:"useCachedMetrics,omitempty"`
	MetricType        string            `json:"metricType,omitempty"`
	Metadata          map[string]string `json:"metadata"`
	AuthenticationRef *struct {
		Name string `json:"name"`
		Kind string `json:"kind,omitempty"`
	} `json:"authenticationRef,omitempty"`
}

// natsJetStreamMetadata are the metadata fields of KEDA's nats-jetstream
// trigger (keda.sh/docs/scalers/nats-jetstream) and whether each is
// required.
var natsJetStreamMetadata = map[string]bool{
	"natsServerMonitoringEndpoint": true,
	"account":                      true,
	"stream":                       true,
	"consumer":                     true,
	"lagThreshold":                 true,
	"activationLagThreshold":       false,
	"useHttps":                     false,
}
