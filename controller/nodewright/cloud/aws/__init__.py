"""The AWS cloud provider (boto3). `AwsCloudProvider` implements the CloudProvider seam;
`actions.AWS_ACTIONS` lists every AWS action it can call (infra/ builds IAM from it);
`interruption_queue.InterruptionQueue` consumes the interruption queue.

Import the submodules directly; this package imports nothing so that `actions` stays cheap
for infra/ and policies/."""
