# What would it take to run this application on ECS Fargate, and what would
# still get out? The answer is always "refused"; the report says why, path by
# path, and hands over the configuration it judged.
#
# The network comes from these attributes, else the provider's ecs block, else
# AF_ECS_REGION, AF_ECS_CLUSTER, AF_ECS_VPC_ID, AF_ECS_VPC_CIDR,
# AF_ECS_SUBNET_IDS and AF_ECS_SUBNET_CIDRS. Without any of them the report is
# computed for a placeholder network (network_described = false).
data "antifailure_ecs_egress_report" "shop" {
  manifest = file("${path.module}/antifailure.yaml")

  region = "eu-west-1"
  # A cluster ARN carries the account the endpoint policies are pinned to;
  # with a cluster name, set account_id (or AF_ECS_ACCOUNT_ID), or the
  # interface-endpoints and s3-gateway paths stay unproven.
  cluster      = "arn:aws:ecs:eu-west-1:123456789012:cluster/previews"
  vpc_id       = "vpc-0abc1234def567890"
  vpc_cidr     = "10.20.0.0/16"
  subnet_ids   = ["subnet-0aaa1111bbb222333", "subnet-0ccc4444ddd555666"]
  subnet_cidrs = ["10.20.1.0/24", "10.20.2.0/24"]

  # Optional: the containment probe container, and what it recorded when it
  # ran inside a real task. A recorded block closes an unproven path with
  # evidence "recorded"; a recorded escape opens any path.
  # probe_image       = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/antifailure/probe:1"
  # recorded_attempts = file("${path.module}/probe-attempts.json")
}

output "summary" {
  value = data.antifailure_ecs_egress_report.shop.summary
}

# id, verdict and evidence of every path: 10 closed (computed), task-metadata
# open (documented), instance-metadata and time-sync unproven (evidence none).
output "paths" {
  value = {
    for p in data.antifailure_ecs_egress_report.shop.paths : p.id => "${p.verdict} (${p.evidence})"
  }
}

# The generated configuration, real AWS API input, as normalized JSON (null
# when the network is not described).
output "plan_json" {
  value = data.antifailure_ecs_egress_report.shop.plan_json
}

# The DNS Firewall rules and endpoint policies are ready for the AWS provider,
# for example:
#
# resource "aws_route53_resolver_firewall_domain_list" "af" {
#   for_each = { for r in data.antifailure_ecs_egress_report.shop.dns_firewall_rules : r.name => r }
#   name     = "shop-${each.key}"
#   domains  = each.value.domains
# }
#
# resource "aws_route53_resolver_firewall_rule" "af" {
#   for_each                = { for r in data.antifailure_ecs_egress_report.shop.dns_firewall_rules : r.name => r }
#   name                    = each.key
#   priority                = each.value.priority
#   action                  = each.value.action
#   block_response          = each.value.action == "BLOCK" ? "NXDOMAIN" : null
#   firewall_domain_list_id = aws_route53_resolver_firewall_domain_list.af[each.key].id
#   firewall_rule_group_id  = aws_route53_resolver_firewall_rule_group.shop.id
# }
#
# resource "aws_vpc_endpoint" "ecr_dkr" {
#   service_name = "com.amazonaws.eu-west-1.ecr.dkr"
#   policy       = data.antifailure_ecs_egress_report.shop.vpc_endpoint_policies["ecr.dkr"]
#   # ...
# }
