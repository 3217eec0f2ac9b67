// dracheck: the opaque device configs and DeviceClass selectors gpushare renders for DRA pools, judged by the code
// that acts on them, with no cluster: the DRA driver for NVIDIA GPUs (sigs.k8s.io/dra-driver-nvidia-gpu v0.5.0) and
// the DRA CEL compiler the API server and the scheduler use (k8s.io/dynamic-resource-allocation/cel, at the version
// the driver's go.mod requires).
//
// Reads one JSON object on stdin:
//
//	{"featureGates": {"MPSSupport": true},
//	 "configs":   [{"name", "deviceType": "gpu"|"mig", "devices": 1, "parameters": {<opaque config>}}],
//	 "selectors": [{"name", "expression", "devices": [{"name", "attributes": {...}, "capacity": {...}}]}]}
//
// and writes {"featureGates": "<error or empty>", "configs": [{"name", "error", "effects"}],
// "selectors": [{"name", "error", "matches": [<device names>]}]} on stdout. Devices are written as a ResourceSlice
// writes them (`attributes: {"type": {"string": "mig"}}`, `capacity: {"memory": {"value": "40Gi"}}`).
//
// Exit status: 0; 2 bad input (one line on stderr).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/dynamic-resource-allocation/cel"

	nvapi "sigs.k8s.io/dra-driver-nvidia-gpu/api/nvidia.com/resource/v1beta1"
	"sigs.k8s.io/dra-driver-nvidia-gpu/pkg/featuregates"
)

// driverName is the driver's name (cmd/webhook/main.go L40 `DriverName`); CEL attributes without a domain take it.
const driverName = "gpu.nvidia.com"

type configInput struct {
	Name       string          `json:"name"`
	DeviceType string          `json:"deviceType"`
	Devices    int             `json:"devices"`
	Parameters json.RawMessage `json:"parameters"`
}

type deviceInput struct {
	Name       string                                                    `json:"name"`
	Attributes map[resourceapi.QualifiedName]resourceapi.DeviceAttribute `json:"attributes"`
	Capacity   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity  `json:"capacity"`
}

type selectorInput struct {
	Name       string        `json:"name"`
	Expression string        `json:"expression"`
	Devices    []deviceInput `json:"devices"`
}

type input struct {
	FeatureGates map[string]bool `json:"featureGates"`
	Configs      []configInput   `json:"configs"`
	Selectors    []selectorInput `json:"selectors"`
}

type configResult struct {
	Name    string   `json:"name"`
	Error   string   `json:"error"`
	Effects []string `json:"effects"`
}

type selectorResult struct {
	Name    string   `json:"name"`
	Error   string   `json:"error"`
	Matches []string `json:"matches"`
}

type output struct {
	FeatureGates string           `json:"featureGates"`
	Configs      []configResult   `json:"configs"`
	Selectors    []selectorResult `json:"selectors"`
}

func main() {
	var in input
	dec := json.NewDecoder(os.Stdin)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		fmt.Fprintln(os.Stderr, "dracheck: stdin is not the expected JSON object:", err)
		os.Exit(2)
	}
	out := output{Configs: []configResult{}, Selectors: []selectorResult{}}
	if err := setFeatureGates(in.FeatureGates); err != nil {
		out.FeatureGates = err.Error()
	}
	for _, c := range in.Configs {
		effects, err := judgeConfig(c)
		r := configResult{Name: c.Name, Effects: effects}
		if err != nil {
			r.Error = err.Error()
			r.Effects = []string{}
		}
		out.Configs = append(out.Configs, r)
	}
	for _, s := range in.Selectors {
		out.Selectors = append(out.Selectors, judgeSelector(s))
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(1)
	}
}

// setFeatureGates sets the gates as the chart hands them to the kubelet plugin, the FEATURE_GATES variable
// "Key=value," per gate (deployments/helm/dra-driver-nvidia-gpu/templates/kubeletplugin.yaml L312-315) read by its
// --feature-gates flag (pkg/flags/featuregates.go), then runs the check the plugin runs at start
// (cmd/gpu-kubelet-plugin/main.go L246 `featuregates.ValidateFeatureGates`).
func setFeatureGates(gates map[string]bool) error {
	keys := make([]string, 0, len(gates))
	for k := range gates {
		keys = append(keys, k)
	}
	sort.Strings(keys) // a Go template ranges over a map in key order
	var env strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&env, "%s=%t,", k, gates[k])
	}
	if env.Len() > 0 {
		if err := featuregates.FeatureGates().(pflag.Value).Set(env.String()); err != nil {
			return fmt.Errorf("--feature-gates=%s: %w", env.String(), err)
		}
	}
	return featuregates.ValidateFeatureGates()
}

// judgeConfig runs on one opaque config what the GPU kubelet plugin runs before it applies it to the devices of a
// claim (cmd/gpu-kubelet-plugin/device_state.go): the strict decode (`getDeviceConfigsWithDefaults` L1733, also the
// driver's webhook, cmd/webhook/main.go L254), the config kind against the device type (`validateDeviceConfigType`
// L1758-1771), Normalize and Validate (`prepareDevices` L1007-1016), then `applySharingConfig` L1287-1356 up to the
// hardware: the strategy's settings getter, the DynamicMIG refusal of MPS, and the MPS control daemon's pinned memory
// limits for the claim's devices (cmd/gpu-kubelet-plugin/sharing.go L257 `MpsControlDaemon.Start`). It returns what
// the plugin would then do to the devices.
func judgeConfig(c configInput) ([]string, error) {
	decoded, err := runtime.Decode(nvapi.StrictDecoder, c.Parameters)
	if err != nil {
		return nil, fmt.Errorf("error decoding config parameters: %w", err)
	}
	var config nvapi.Interface
	switch typed := decoded.(type) {
	case *nvapi.GpuConfig:
		if c.DeviceType != "gpu" {
			return nil, fmt.Errorf("cannot apply GpuConfig to a device of type %q", c.DeviceType)
		}
		config = typed
	case *nvapi.MigDeviceConfig:
		if c.DeviceType != "mig" {
			return nil, fmt.Errorf("cannot apply MigDeviceConfig to a device of type %q", c.DeviceType)
		}
		config = typed
	default:
		return nil, fmt.Errorf("gpushare renders GpuConfig and MigDeviceConfig only, got %T", decoded)
	}
	if err := config.Normalize(); err != nil {
		return nil, fmt.Errorf("error normalizing GPU config: %w", err)
	}
	if err := config.Validate(); err != nil {
		return nil, fmt.Errorf("error validating GPU config: %w", err)
	}
	switch typed := config.(type) {
	case *nvapi.GpuConfig:
		if typed.Sharing != nil {
			return sharingEffects(typed.Sharing, c)
		}
	case *nvapi.MigDeviceConfig:
		if typed.Sharing != nil {
			return sharingEffects(typed.Sharing, c)
		}
	}
	return []string{"none"}, nil
}

func sharingEffects(sharing nvapi.Sharing, c configInput) ([]string, error) {
	effects := []string{}
	if featuregates.Enabled(featuregates.TimeSlicingSettings) && sharing.IsTimeSlicing() {
		tsc, err := sharing.GetTimeSlicingConfig()
		if err != nil {
			return nil, fmt.Errorf("error getting timeslice config: %w", err)
		}
		// A MigDeviceConfig's getter returns nil: "timeslicing settings cannot be set on MIG devices directly"
		// (device_state.go L1316-1319), so the plugin sets nothing on the device.
		if tsc != nil {
			effects = append(effects, fmt.Sprintf("time-slice interval %s on the GPU", *tsc.Interval))
		}
	}
	if featuregates.Enabled(featuregates.MPSSupport) && sharing.IsMps() {
		if featuregates.Enabled(featuregates.DynamicMIG) {
			return nil, fmt.Errorf("MPS is not yet supported when using featureGates.DynamicMIG=true")
		}
		mpsc, err := sharing.GetMpsConfig()
		if err != nil {
			return nil, fmt.Errorf("error getting MPS configuration: %w", err)
		}
		uuids := make([]string, c.Devices)
		for i := range uuids {
			uuids[i] = fmt.Sprintf("%s-device-%d", c.DeviceType, i)
		}
		effect := "MPS control daemon"
		if mpsc != nil {
			limits, err := mpsc.DefaultPerDevicePinnedMemoryLimit.Normalize(uuids, mpsc.DefaultPinnedDeviceMemoryLimit)
			if err != nil {
				return nil, fmt.Errorf("error transforming DefaultPerDevicePinnedMemoryLimit into string: %w", err)
			}
			if mpsc.DefaultActiveThreadPercentage != nil {
				effect += fmt.Sprintf(", active threads %d%%", *mpsc.DefaultActiveThreadPercentage)
			}
			for _, uuid := range uuids {
				if limit, ok := limits[uuid]; ok {
					effect += fmt.Sprintf(", pinned memory %s on %s", limit, uuid)
				}
			}
		}
		effects = append(effects, effect)
	}
	if len(effects) == 0 {
		effects = append(effects, "none")
	}
	return effects, nil
}

// judgeSelector compiles a DeviceClass selector as the API server validates it and evaluates it on each device as
// the scheduler's allocator does (cel.GetCompiler(...).CompileCELExpression, CompilationResult.DeviceMatches).
func judgeSelector(s selectorInput) selectorResult {
	r := selectorResult{Name: s.Name, Matches: []string{}}
	compiled := cel.GetCompiler(cel.Features{}).CompileCELExpression(s.Expression, cel.Options{})
	if compiled.Error != nil {
		r.Error = compiled.Error.Error()
		return r
	}
	if compiled.MaxCost > resourceapi.CELSelectorExpressionMaxCost {
		r.Error = fmt.Sprintf("estimated cost %d exceeds the limit %d", compiled.MaxCost,
			resourceapi.CELSelectorExpressionMaxCost)
		return r
	}
	for _, d := range s.Devices {
		matches, _, err := compiled.DeviceMatches(context.Background(), cel.Device{
			Driver: driverName, Attributes: d.Attributes, Capacity: d.Capacity,
		})
		if err != nil {
			r.Error = fmt.Sprintf("device %s: %v", d.Name, err)
			return r
		}
		if matches {
			r.Matches = append(r.Matches, d.Name)
		}
	}
	return r
}
