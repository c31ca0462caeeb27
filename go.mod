module netbox-plugin-bridge

go 1.26
