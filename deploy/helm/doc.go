// Package helm holds the test of the Helm chart in agentmesh/: it renders
// the chart with helm for the default and the secure values and decodes
// every manifest strictly into the Kubernetes API types and KEDA's
// ScaledObject (docs/kubernetes.md).
package helm
