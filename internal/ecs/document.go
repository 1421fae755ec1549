package ecs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	cwlschemas "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/schemas"
	ecrschemas "github.com/aws/aws-sdk-go-v2/service/ecr/schemas"
	ecsschemas "github.com/aws/aws-sdk-go-v2/service/ecs/schemas"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/aws/smithy-go/transport/http/protocol/awsjson"
)

// The plan document is JSON with a stable key order (object keys sorted, no
// insignificant white space, absent and empty values left out). The ECS, ECR
// and CloudWatch Logs inputs are written exactly as aws-sdk-go-v2 writes them
// on the wire (awsJson1_1, the member names the APIs and the AWS CLI's
// --cli-input-json take); the Route 53 Resolver inputs use the API's member
// names, which are the SDK's; the EC2 inputs use the EC2 API's member names
// over the SDK's ec2/types shapes.

// wire serializes an input the way the SDK's client would send it.
func wire(service *smithy.ServiceSchema, op, in, out *smithy.Schema, v smithy.Serializable) (json.RawMessage, error) {
	req, ok := smithyhttp.NewStackRequest().(*smithyhttp.Request)
	if !ok {
		return nil, fmt.Errorf("smithy-go: unexpected request type")
	}
	if err := awsjson.New11(service).SerializeRequest(context.Background(), smithy.NewOperationSchema(op, in, out), v, req); err != nil {
		return nil, fmt.Errorf("serialize %s: %w", op.ID().Name, err)
	}
	stream := req.GetStream()
	if stream == nil {
		return json.RawMessage("{}"), nil
	}
	b, err := io.ReadAll(stream)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// wireMember is one input of an object: its member name and how to
// serialize it. Callers add only the inputs that are set.
type wireMember struct {
	name string
	op   func() (json.RawMessage, error)
}

func wireObject(members ...wireMember) ([]byte, error) {
	obj := map[string]json.RawMessage{}
	for _, m := range members {
		b, err := m.op()
		if err != nil {
			return nil, err
		}
		obj[m.name] = b
	}
	return json.Marshal(obj)
}

// MarshalJSON writes the ECS inputs as the SDK sends them.
func (e ECSInputs) MarshalJSON() ([]byte, error) {
	var members []wireMember
	if e.RegisterTaskDefinition != nil {
		members = append(members, wireMember{"RegisterTaskDefinition", func() (json.RawMessage, error) {
			return wire(ecsschemas.AmazonEC2ContainerServiceV20141113, ecsschemas.RegisterTaskDefinition,
				ecsschemas.RegisterTaskDefinitionRequest, ecsschemas.RegisterTaskDefinitionResponse, e.RegisterTaskDefinition)
		}})
	}
	if e.CreateService != nil {
		members = append(members, wireMember{"CreateService", func() (json.RawMessage, error) {
			return wire(ecsschemas.AmazonEC2ContainerServiceV20141113, ecsschemas.CreateService,
				ecsschemas.CreateServiceRequest, ecsschemas.CreateServiceResponse, e.CreateService)
		}})
	}
	return wireObject(members...)
}

// MarshalJSON writes the ECR input as the SDK sends it.
func (e ECRInputs) MarshalJSON() ([]byte, error) {
	var members []wireMember
	if e.CreateRepository != nil {
		members = append(members, wireMember{"CreateRepository", func() (json.RawMessage, error) {
			return wire(ecrschemas.AmazonEC2ContainerRegistry_V20150921, ecrschemas.CreateRepository,
				ecrschemas.CreateRepositoryRequest, ecrschemas.CreateRepositoryResponse, e.CreateRepository)
		}})
	}
	return wireObject(members...)
}

// MarshalJSON writes the CloudWatch Logs inputs as the SDK sends them.
func (l LogsInputs) MarshalJSON() ([]byte, error) {
	var members []wireMember
	if l.CreateLogGroup != nil {
		members = append(members, wireMember{"CreateLogGroup", func() (json.RawMessage, error) {
			return wire(cwlschemas.Logs_20140328, cwlschemas.CreateLogGroup, cwlschemas.CreateLogGroupRequest, nil, l.CreateLogGroup)
		}})
	}
	if l.PutRetentionPolicy != nil {
		members = append(members, wireMember{"PutRetentionPolicy", func() (json.RawMessage, error) {
			return wire(cwlschemas.Logs_20140328, cwlschemas.PutRetentionPolicy, cwlschemas.PutRetentionPolicyRequest, nil, l.PutRetentionPolicy)
		}})
	}
	return wireObject(members...)
}

// JSON is the plan's normalized JSON document.
func (p *Plan) JSON() ([]byte, error) {
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return Normalize(raw)
}

// Normalize rewrites a JSON document in the plan's normal form: object keys
// sorted, no insignificant white space, null and "" values and the objects
// and lists left empty by removing them dropped. Numbers keep their text.
func Normalize(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	v, _ = prune(v)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// prune drops empty values; keep is false when v itself is empty.
func prune(v any) (out any, keep bool) {
	switch t := v.(type) {
	case nil:
		return nil, false
	case string:
		return t, t != ""
	case map[string]any:
		for k, e := range t {
			if pe, ok := prune(e); ok {
				t[k] = pe
			} else {
				delete(t, k)
			}
		}
		return t, len(t) > 0
	case []any:
		kept := t[:0]
		for _, e := range t {
			if pe, ok := prune(e); ok {
				kept = append(kept, pe)
			}
		}
		return kept, len(kept) > 0
	}
	return v, true
}

// ParsePlan reads a plan document. Member names are matched as
// encoding/json matches them (case-insensitively), so the wire names of the
// ECS, ECR and Logs inputs read back into the SDK's input structs.
func ParsePlan(doc []byte) (*Plan, error) {
	var p Plan
	if err := json.Unmarshal(doc, &p); err != nil {
		return nil, fmt.Errorf("the plan document is not a plan: %w", err)
	}
	return &p, nil
}
