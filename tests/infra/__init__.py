"""Tests of the infra/ Pulumi program under Pulumi mocks."""
