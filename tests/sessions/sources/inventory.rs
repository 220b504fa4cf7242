//! An in-memory inventory of items with stock levels.
use std::collections::HashMap;
use std::fmt;

#[derive(Debug, Clone)]
pub struct Item {
    pub sku: String,
    pub name: String,
    pub quantity: u32,
    pub price_cents: u64,
}

#[derive(Debug, PartialEq)]
pub enum InventoryError {
    UnknownSku(String),
    InsufficientStock { sku: String, requested: u32, available: u32 },
}

impl fmt::Display for InventoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InventoryError::UnknownSku(sku) => write!(f, "unknown item {}", sku),
            InventoryError::InsufficientStock { sku, requested, available } => {
                write!(f, "{} has {} in stock, {} requested", sku, available, requested)
            }
        }
    }
}

#[derive(Default)]
pub struct Inventory {
    items: HashMap<String, Item>,
}

impl Inventory {
    pub fn add(&mut self, item: Item) {
        self.items
            .entry(item.sku.clone())
            .and_modify(|existing| existing.quantity += item.quantity)
            .or_insert(item);
    }

    pub fn remove(&mut self, sku: &str, quantity: u32) -> Result<u32, InventoryError> {
        let item = self
            .items
            .get_mut(sku)
            .ok_or_else(|| InventoryError::UnknownSku(sku.to_string()))?;
        if item.quantity < quantity {
            return Err(InventoryError::InsufficientStock {
                sku: sku.to_string(),
                requested: quantity,
                available: item.quantity,
            });
        }
        item.quantity -= quantity;
        Ok(item.quantity)
    }

    pub fn total_value_cents(&self) -> u64 {
        self.items.values().map(|item| item.price_cents * item.quantity as u64).sum()
    }
}
