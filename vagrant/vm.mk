# BMv2 reference VM (Vagrant); the Makefile includes this file: `include vagrant/vm.mk`.
#
#   make vm                              create + provision the VM (vagrant up)
#   make vm-test [PYTEST_ARGS=...]       test suite inside the VM (BMv2 cases run there)
#   make vm-run TOPO=clos4 [TARGET=bmv2] one `emu run` in the VM; results -> results/vm/
#   make vm-crosscheck [XC_ARGS=...]     `emu crosscheck` (embedded vs BMv2) in the VM
#   make vm-experiments [EXPERIMENTS=vagrant/experiments/lb-compare.yaml]
#   make vm-ssh / vm-provision / vm-stop / vm-destroy
#
# TARGET defaults to bmv2 here (the VM exists for it) unless given on the command line.

VAGRANT      ?= vagrant
VM_CMD       := VAGRANT_CWD=$(CURDIR)/vagrant $(VAGRANT)
VM_IN        := sudo bash /vagrant/vagrant/in-vm.sh
VM_TARGET    := $(if $(filter command line environment,$(origin TARGET)),$(TARGET),bmv2)
EXPERIMENTS  ?= vagrant/experiments/lb-compare.yaml
XC_ARGS      ?= --generate 200
VM_RUN_ARGS   = --lb $(LB) --cc $(CC) --recovery $(RECOVERY) --workload $(WORKLOAD) --target $(VM_TARGET)

.PHONY: vm vm-provision vm-ssh vm-test vm-run vm-crosscheck vm-experiments vm-stop vm-destroy

vm:
	$(VM_CMD) up

vm-provision:
	$(VM_CMD) provision

vm-ssh:
	$(VM_CMD) ssh

vm-test:
	$(VM_CMD) ssh -c '$(VM_IN) test $(PYTEST_ARGS)'

vm-run:
	$(VM_CMD) ssh -c '$(VM_IN) run $(TOPO) $(VM_RUN_ARGS)'

vm-crosscheck:
	$(VM_CMD) ssh -c '$(VM_IN) crosscheck $(XC_ARGS)'

vm-experiments:
	$(VM_CMD) ssh -c '$(VM_IN) experiments $(EXPERIMENTS)'

vm-stop:
	$(VM_CMD) halt

vm-destroy:
	$(VM_CMD) destroy -f
