package ecs

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/arn"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// The network variables. The first six describe the network; the
// probe image and the account are optional.
const (
	EnvRegion      = "AF_ECS_REGION"
	EnvCluster     = "AF_ECS_CLUSTER"
	EnvVPCID       = "AF_ECS_VPC_ID"
	EnvVPCCIDR     = "AF_ECS_VPC_CIDR"
	EnvSubnetIDs   = "AF_ECS_SUBNET_IDS"
	EnvSubnetCIDRs = "AF_ECS_SUBNET_CIDRS"
	EnvProbeImage  = "AF_ECS_PROBE_IMAGE"
	EnvAccountID   = "AF_ECS_ACCOUNT_ID"
)

// Attribute names of the same settings on the data source.
const (
	AttrRegion      = "region"
	AttrCluster     = "cluster"
	AttrVPCID       = "vpc_id"
	AttrVPCCIDR     = "vpc_cidr"
	AttrSubnetIDs   = "subnet_ids"
	AttrSubnetCIDRs = "subnet_cidrs"
	AttrProbeImage  = "probe_image"
	AttrAccountID   = "account_id"
)

// Network refusals.
var (
	NetworkIncomplete = refusal.Register("AF-ECS-010",
		"Some of the six ECS network variables are set and others are not, so the report would judge a network that is partly yours and partly made up.",
		"Set all six of AF_ECS_REGION, AF_ECS_CLUSTER, AF_ECS_VPC_ID, AF_ECS_VPC_CIDR, AF_ECS_SUBNET_IDS and AF_ECS_SUBNET_CIDRS (or the data source attributes), or none of them.")
	NetworkBadValue = refusal.Register("AF-ECS-011",
		"An ECS network variable holds a value that is not what it names (a region, a cluster, a VPC or subnet id, a CIDR block, an image).",
		"Correct the variable or attribute named in the message.")
	AccountMismatch = refusal.Register("AF-ECS-030",
		"AF_ECS_ACCOUNT_ID names one AWS account and the cluster ARN in AF_ECS_CLUSTER another; the endpoint policies would be pinned to an account the cluster is not in.",
		"Give AF_ECS_ACCOUNT_ID (account_id) the account in the cluster ARN, or leave it unset: a cluster ARN carries the account.")
	SubnetCountMismatch = refusal.Register("AF-ECS-012",
		"AF_ECS_SUBNET_IDS and AF_ECS_SUBNET_CIDRS do not list the same number of subnets; they are read in matching order.",
		"List one CIDR block in AF_ECS_SUBNET_CIDRS for each subnet in AF_ECS_SUBNET_IDS, in the same order.")
	SubnetOutsideVPC = refusal.Register("AF-ECS-013",
		"A subnet in AF_ECS_SUBNET_CIDRS does not fit the VPC: it lies outside AF_ECS_VPC_CIDR, overlaps another subnet, or is listed twice.",
		"Give each subnet its own CIDR block inside AF_ECS_VPC_CIDR, as the VPC reports it.")
)

// NetworkSettings are the network values as given: attributes, or the
// variables. Empty means not given.
type NetworkSettings struct {
	Region      string
	Cluster     string
	VPCID       string
	VPCCIDR     string
	SubnetIDs   []string
	SubnetCIDRs []string
	ProbeImage  string
	AccountID   string
}

// Or fills every setting s leaves empty from fallback.
func (s NetworkSettings) Or(fallback NetworkSettings) NetworkSettings {
	str := func(a, b string) string {
		if a != "" {
			return a
		}
		return b
	}
	list := func(a, b []string) []string {
		if len(a) > 0 {
			return a
		}
		return b
	}
	return NetworkSettings{
		Region:      str(s.Region, fallback.Region),
		Cluster:     str(s.Cluster, fallback.Cluster),
		VPCID:       str(s.VPCID, fallback.VPCID),
		VPCCIDR:     str(s.VPCCIDR, fallback.VPCCIDR),
		SubnetIDs:   list(s.SubnetIDs, fallback.SubnetIDs),
		SubnetCIDRs: list(s.SubnetCIDRs, fallback.SubnetCIDRs),
		ProbeImage:  str(s.ProbeImage, fallback.ProbeImage),
		AccountID:   str(s.AccountID, fallback.AccountID),
	}
}

// Subnet is one subnet of the network.
type Subnet struct {
	ID   string
	CIDR netip.Prefix
}

// Network is the network the report is computed for.
type Network struct {
	Region  string
	Cluster string
	VPCID   string
	VPCCIDR netip.Prefix
	Subnets []Subnet
	// ProbeImage is the containment probe's image; empty: no probe container.
	ProbeImage string
	// Account is the environment's 12-digit AWS account, from the cluster
	// ARN or AF_ECS_ACCOUNT_ID; empty: unknown, and the endpoint policies
	// cannot be pinned to it.
	Account string
	// AccountFrom says where Account came from, for the report.
	AccountFrom string
	// Described is false when none of the six variables was set and the
	// report is computed for a placeholder network.
	Described bool
}

// AccountSettles names what settles the paths an unknown account leaves
// unproven.
const AccountSettles = "set " + EnvAccountID + " (attribute " + AttrAccountID + ") or give " + EnvCluster + " as a cluster ARN (arn:aws:ecs:<region>:<account>:cluster/<name>)"

// PlaceholderNetwork is the network a report is computed for when the six
// variables are unset. Its identifiers are visibly not real ones.
func PlaceholderNetwork() Network {
	return Network{
		Region:  "us-east-1",
		Cluster: "antifailure",
		VPCID:   "vpc-00000000000000000",
		VPCCIDR: netip.MustParsePrefix("10.0.0.0/16"),
		Subnets: []Subnet{
			{ID: "subnet-00000000000000000", CIDR: netip.MustParsePrefix("10.0.0.0/24")},
			{ID: "subnet-00000000000000001", CIDR: netip.MustParsePrefix("10.0.1.0/24")},
		},
	}
}

// Sentence says, in one sentence, what the network means for the report.
func (n Network) Sentence() string {
	account := "The account is unknown (" + AccountSettles + ")."
	if n.Account != "" {
		account = "Account " + n.Account + " (from " + n.AccountFrom + ")."
	}
	if n.Described {
		return fmt.Sprintf("The report is computed for the network the variables describe: VPC %s (%s) in %s, %d subnet(s), cluster %s. %s Setting them changes the report, not the answer.",
			n.VPCID, n.VPCCIDR, n.Region, len(n.Subnets), n.Cluster, account)
	}
	return fmt.Sprintf("The ECS network variables (%s, %s, %s, %s, %s, %s) are not set, so the report is computed for a placeholder network (VPC %s, %s, in %s). Setting them changes the report, not the answer: runtime.provider ecs is refused either way.",
		EnvRegion, EnvCluster, EnvVPCID, EnvVPCCIDR, EnvSubnetIDs, EnvSubnetCIDRs, n.VPCID, n.VPCCIDR, n.Region)
}

// setting is one value with where it came from, for messages.
type setting struct {
	env, attr string
	value     string
	list      []string
	fromEnv   bool
}

func (s setting) source() string {
	if s.fromEnv {
		return s.env + " (from the environment)"
	}
	return s.env + " (attribute " + s.attr + ")"
}

func (s setting) set() bool { return s.value != "" || len(s.list) > 0 }

var (
	regionPattern     = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d{1,2}$`)
	clusterName       = regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`)
	accountPattern    = regexp.MustCompile(`^\d{12}$`)
	vpcIDPattern      = regexp.MustCompile(`^vpc-([0-9a-f]{8}|[0-9a-f]{17})$`)
	subnetIDPattern   = regexp.MustCompile(`^subnet-([0-9a-f]{8}|[0-9a-f]{17})$`)
	imageDisallowed   = regexp.MustCompile(`[\s"'\\]`)
	maxImageReference = 255
)

// ResolveNetwork builds the network from explicit settings (attributes),
// falling back per setting to the variables read through getenv (explicit
// wins). None of the six set: the placeholder network, Described false.
// Some set: refused (AF-ECS-010). Bad values: refused naming the variable
// (AF-ECS-011/012/013). Every refusal found is returned, as a refusal.List.
func ResolveNetwork(explicit NetworkSettings, getenv func(string) string) (Network, error) {
	pick := func(env, attr, value string) setting {
		if value != "" {
			return setting{env: env, attr: attr, value: value}
		}
		return setting{env: env, attr: attr, value: strings.TrimSpace(getenv(env)), fromEnv: true}
	}
	pickList := func(env, attr string, values []string) setting {
		if len(values) > 0 {
			return setting{env: env, attr: attr, list: values}
		}
		s := setting{env: env, attr: attr, fromEnv: true}
		if raw := strings.TrimSpace(getenv(env)); raw != "" {
			for _, v := range strings.Split(raw, ",") {
				s.list = append(s.list, strings.TrimSpace(v))
			}
		}
		return s
	}
	region := pick(EnvRegion, AttrRegion, explicit.Region)
	cluster := pick(EnvCluster, AttrCluster, explicit.Cluster)
	vpcID := pick(EnvVPCID, AttrVPCID, explicit.VPCID)
	vpcCIDR := pick(EnvVPCCIDR, AttrVPCCIDR, explicit.VPCCIDR)
	subnetIDs := pickList(EnvSubnetIDs, AttrSubnetIDs, explicit.SubnetIDs)
	subnetCIDRs := pickList(EnvSubnetCIDRs, AttrSubnetCIDRs, explicit.SubnetCIDRs)
	probe := pick(EnvProbeImage, AttrProbeImage, explicit.ProbeImage)
	account := pick(EnvAccountID, AttrAccountID, explicit.AccountID)

	var errs refusal.List
	bad := func(s setting, format string, args ...any) {
		errs = append(errs, refusal.New(NetworkBadValue, "%s %s", s.source(), fmt.Sprintf(format, args...)).OnAttribute(s.attr))
	}
	if probe.value != "" && (len(probe.value) > maxImageReference || imageDisallowed.MatchString(probe.value)) {
		bad(probe, "%q is not an image reference (no spaces or quotes, at most %d characters)", probe.value, maxImageReference)
	}
	if account.value != "" && !accountPattern.MatchString(account.value) {
		bad(account, "%q is not an AWS account id (12 digits)", account.value)
	}

	six := []setting{region, cluster, vpcID, vpcCIDR, subnetIDs, subnetCIDRs}
	var missing []setting
	for _, s := range six {
		if !s.set() {
			missing = append(missing, s)
		}
	}
	if len(missing) == len(six) {
		n := PlaceholderNetwork()
		n.ProbeImage = probe.value
		if account.value != "" {
			n.Account, n.AccountFrom = account.value, account.source()
		}
		if len(errs) > 0 {
			return Network{}, errs
		}
		return n, nil
	}
	if len(missing) > 0 {
		var names, given []string
		for _, s := range missing {
			names = append(names, s.env+" ("+s.attr+")")
		}
		at := ""
		for _, s := range six {
			if s.set() {
				given = append(given, s.env)
				if at == "" {
					at = s.attr // the refusal points at a value that was given
				}
			}
		}
		errs = append(errs, refusal.New(NetworkIncomplete, "%s not set, while %s %s",
			strings.Join(names, ", ")+map[bool]string{true: " is", false: " are"}[len(names) == 1],
			strings.Join(given, ", "), map[bool]string{true: "is", false: "are"}[len(given) == 1]).
			OnAttribute(at))
		return Network{}, errs
	}

	n := Network{Region: region.value, Cluster: cluster.value, VPCID: vpcID.value, ProbeImage: probe.value, Described: true}
	if !regionPattern.MatchString(region.value) {
		bad(region, "%q is not an AWS region name such as eu-west-1", region.value)
	}
	if account.value != "" && accountPattern.MatchString(account.value) {
		n.Account, n.AccountFrom = account.value, account.source()
	}
	if arn.IsARN(cluster.value) {
		a, err := arn.Parse(cluster.value)
		name, isCluster := strings.CutPrefix(a.Resource, "cluster/")
		switch {
		case err != nil || a.Service != "ecs" || !isCluster || !clusterName.MatchString(name) || !strings.HasPrefix(a.Partition, "aws"):
			bad(cluster, "%q is not an ECS cluster ARN (arn:aws:ecs:<region>:<account>:cluster/<name>)", cluster.value)
		case !accountPattern.MatchString(a.AccountID):
			bad(cluster, "%q names account %q, which is not an AWS account id (12 digits)", cluster.value, a.AccountID)
		case a.Region != region.value:
			bad(cluster, "%q is a cluster in %s, not in %s (%s)", cluster.value, a.Region, region.value, EnvRegion)
		case n.Account != "" && n.Account != a.AccountID:
			errs = append(errs, refusal.New(AccountMismatch, "%s is %s, but %s %q is a cluster in account %s",
				account.source(), n.Account, cluster.source(), cluster.value, a.AccountID).OnAttribute(account.attr))
		default:
			n.Account, n.AccountFrom = a.AccountID, cluster.source()+", a cluster ARN"
		}
	} else if !clusterName.MatchString(cluster.value) {
		bad(cluster, "%q is not an ECS cluster name (letters, digits, hyphens, underscores, up to 255) or cluster ARN", cluster.value)
	}
	if !vpcIDPattern.MatchString(vpcID.value) {
		bad(vpcID, "%q is not a VPC id (vpc- and 8 or 17 hexadecimal digits)", vpcID.value)
	}
	vpcPrefix, vpcOK := parseCIDR(vpcCIDR, vpcCIDR.value, bad)
	n.VPCCIDR = vpcPrefix

	seenID := map[string]int{}
	for i, id := range subnetIDs.list {
		if !subnetIDPattern.MatchString(id) {
			bad(subnetIDs, "entry %d, %q, is not a subnet id (subnet- and 8 or 17 hexadecimal digits)", i+1, id)
			continue
		}
		if first, dup := seenID[id]; dup {
			errs = append(errs, refusal.New(SubnetOutsideVPC, "%s lists %s twice (entries %d and %d)", subnetIDs.source(), id, first+1, i+1).OnAttribute(subnetIDs.attr))
		}
		seenID[id] = i
	}
	var prefixes []netip.Prefix
	cidrsOK := true
	for i, c := range subnetCIDRs.list {
		p, ok := parseCIDR(subnetCIDRs, c, func(s setting, format string, args ...any) {
			bad(s, "entry %d: %s", i+1, fmt.Sprintf(format, args...))
		})
		cidrsOK = cidrsOK && ok
		prefixes = append(prefixes, p)
	}
	if len(subnetIDs.list) != len(subnetCIDRs.list) {
		errs = append(errs, refusal.New(SubnetCountMismatch, "%s lists %d subnet(s) but %s lists %d CIDR block(s)",
			subnetIDs.source(), len(subnetIDs.list), subnetCIDRs.source(), len(subnetCIDRs.list)).OnAttribute(subnetCIDRs.attr))
	}
	if vpcOK && cidrsOK {
		for i, p := range prefixes {
			if vpcPrefix.Bits() > p.Bits() || !vpcPrefix.Contains(p.Addr()) {
				errs = append(errs, refusal.New(SubnetOutsideVPC, "%s entry %d, %s, lies outside the VPC's %s (%s)",
					subnetCIDRs.source(), i+1, p, vpcPrefix, EnvVPCCIDR).OnAttribute(subnetCIDRs.attr))
			}
			for j := 0; j < i; j++ {
				if p.Overlaps(prefixes[j]) {
					errs = append(errs, refusal.New(SubnetOutsideVPC, "%s entries %d (%s) and %d (%s) overlap; subnets of a VPC cannot",
						subnetCIDRs.source(), j+1, prefixes[j], i+1, p).OnAttribute(subnetCIDRs.attr))
				}
			}
		}
	}
	if len(errs) > 0 {
		return Network{}, errs
	}
	for i, id := range subnetIDs.list {
		n.Subnets = append(n.Subnets, Subnet{ID: id, CIDR: prefixes[i]})
	}
	return n, nil
}

// parseCIDR reads an IPv4 network in the sizes a VPC or subnet may have
// (/16 to /28), reporting through bad.
func parseCIDR(s setting, value string, bad func(setting, string, ...any)) (netip.Prefix, bool) {
	p, err := netip.ParsePrefix(value)
	switch {
	case err != nil:
		bad(s, "%q is not a CIDR block such as 10.0.0.0/16", value)
	case !p.Addr().Is4():
		bad(s, "%q is not an IPv4 CIDR block; the report needs the VPC's primary IPv4 block", value)
	case p.Masked() != p:
		bad(s, "%q has host bits set; the network is %s", value, p.Masked())
	case p.Bits() < 16 || p.Bits() > 28:
		bad(s, "%q is a /%d; VPC and subnet blocks are /16 to /28", value, p.Bits())
	default:
		return p, true
	}
	return netip.Prefix{}, false
}
