import { AccountModel } from '../modules/accounts/account.model';
import { ApiKeyModel } from '../modules/accounts/api-key.model';
import { CustomerModel } from '../modules/customers/customer.model';
import { ProductModel } from '../modules/catalog/product.model';
import { PriceModel } from '../modules/catalog/price.model';

export const MODELS = [AccountModel, ApiKeyModel, CustomerModel, ProductModel, PriceModel];
