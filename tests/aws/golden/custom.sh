#!/bin/bash
/opt/my-bootstrap.sh --cluster demo
